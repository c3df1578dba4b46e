import { createHmac, randomBytes } from 'node:crypto'
import type { ApiKey, CallerKey } from '../../protocol/schemas/api-key.js'

/** What the bucket holds per key: the key as shown, and the HMAC of its secret (never the secret). */
export interface StoredKey {
  key: ApiKey
  /** HMAC-SHA256 of the secret with the cluster's key (`secret`), base64. */
  hash: string
  /** Fingerprint of the create request, for the CLI's and the route's retries. */
  created_by?: string
}

export const KEY_PREFIX = 'key.'
export const keyKey = (id: string) => `${KEY_PREFIX}${id}`
/** The cluster's HMAC key of API keys, beside them. */
export const SECRET_KEY = 'secret'

/** How a key we make begins: tells a Troupe key apart in a leak scanner and in logs. */
export const KEY_PREFIX_TEXT = 'sk-troupe-'

/** A new key: the prefix and 32 random bytes (base64url, 43 characters). */
export const newSecret = (): string => `${KEY_PREFIX_TEXT}${randomBytes(32).toString('base64url')}`

/** What a person sees of a key: its first four random characters and its last four. */
export const hintOf = (secret: string): string =>
  secret.startsWith(KEY_PREFIX_TEXT)
    ? `${KEY_PREFIX_TEXT}${secret.slice(KEY_PREFIX_TEXT.length, KEY_PREFIX_TEXT.length + 4)}…${secret.slice(-4)}`
    : `…${secret.slice(-4)}`

/** The keyed hash a key is stored and looked up by. */
export const hashOf = (clusterKey: Uint8Array, secret: string): string => createHmac('sha256', clusterKey).update(secret).digest('base64')

/** The form every gateway checks a key in. */
export const callerOf = (k: ApiKey): CallerKey => ({
  id: k.id,
  scope: k.scope,
  workspace_id: k.workspace_id,
  expiresAt: k.expires_at ? Date.parse(k.expires_at) : Number.POSITIVE_INFINITY,
  revoked: k.revoked_at !== null,
  limits: k.limits,
  caller: { api_key_id: k.id, workspace_id: k.workspace_id },
})
