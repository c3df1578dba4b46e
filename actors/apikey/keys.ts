import { readFileSync } from 'node:fs'
import type { KV } from '@nats-io/kv'
import { fail } from '../../protocol/errors/fail.js'
import { idFromKey, newId } from '../../protocol/ids.js'
import {
  type ApiKey,
  type ApiKeyCreateInput,
  type ApiKeyUpdateInput,
  type ApiKeyWithSecret,
  DEFAULT_KEY_LIMITS,
  DEFAULT_WORKSPACE,
  type KeyLimits,
} from '../../protocol/schemas/api-key.js'
import { now } from '../../protocol/time.js'
import { type Page, pageOf, type Projection, RecordStore } from '../kit/index.js'
import { hashOf, hintOf, keyKey, newSecret, type StoredKey } from './records.js'

const inSeconds = (s: number | null | undefined, from = Date.now()) => (s == null ? null : new Date(from + s * 1000).toISOString())
const limitsOf = (base: KeyLimits, patch: Partial<KeyLimits> | undefined): KeyLimits => ({ ...base, ...patch })

/**
 * The operator's operations on API keys, over the keys' bucket: the admin routes' handlers and the `troupe keys` CLI
 * both run these, so a key made either way is the same record. The secret is made here, returned once, and stored only
 * as its keyed hash.
 */
export class ApiKeys {
  private readonly store: RecordStore<StoredKey>

  constructor(
    kv: KV,
    private readonly clusterKey: Uint8Array,
    private readonly projection: Projection<ApiKey, StoredKey>,
  ) {
    this.store = new RecordStore<StoredKey>(kv)
  }

  async create(b: ApiKeyCreateInput): Promise<ApiKeyWithSecret> {
    const secret = newSecret()
    const t = now()
    const key: ApiKey = {
      id: newId('apikey'),
      type: 'api_key',
      name: b.name,
      workspace_id: b.workspace_id ?? DEFAULT_WORKSPACE,
      scope: b.scope ?? 'full',
      hint: hintOf(secret),
      limits: limitsOf(DEFAULT_KEY_LIMITS, b.limits),
      created_at: t,
      updated_at: t,
      expires_at: inSeconds(b.expires_in_seconds),
      revoked_at: null,
      rotated_at: null,
    }
    // A fresh ULID that is taken is a collision no retry of the same id mends.
    if ((await this.store.create(keyKey(key.id), { key, hash: hashOf(this.clusterKey, secret) })) === false) throw fail('contention')
    return { ...key, key: secret }
  }

  async get(id: string): Promise<ApiKey> {
    const cur = await this.store.get(keyKey(id))
    if (!cur) throw fail('api_key_not_found', id)
    return cur.value.key
  }

  async list(q: { limit?: number; page?: string }): Promise<Page<ApiKey>> {
    await this.projection.fresh()
    return pageOf(this.projection, 'api_keys', {}, q.page, q.limit ?? 100, () => true)
  }

  update(id: string, b: ApiKeyUpdateInput): Promise<ApiKey> {
    return this.change(id, (k) => ({
      ...k,
      name: b.name ?? k.name,
      expires_at: b.expires_in_seconds === undefined ? k.expires_at : inSeconds(b.expires_in_seconds),
      limits: limitsOf(k.limits, b.limits),
    }))
  }

  /** A new secret for the key: the old one stops working everywhere as soon as the hosts see the change. */
  async rotate(id: string): Promise<ApiKeyWithSecret> {
    const secret = newSecret()
    const key = await this.change(
      id,
      (k) => {
        if (k.revoked_at) throw fail('api_key_revoked', id)
        return { ...k, hint: hintOf(secret), rotated_at: now() }
      },
      hashOf(this.clusterKey, secret),
    )
    return { ...key, key: secret }
  }

  /** Revoked for good (kept, so the list shows it and the server stays protected); revoking again changes nothing. */
  revoke(id: string): Promise<ApiKey> {
    return this.change(id, (k) => (k.revoked_at ? k : { ...k, revoked_at: now() }))
  }

  private change(id: string, edit: (k: ApiKey) => ApiKey, hash?: string): Promise<ApiKey> {
    return this.store.mutate(
      keyKey(id),
      ({ value }) => {
        const next = edit(value.key)
        if (next === value.key && hash === undefined) return { result: next }
        const key = { ...next, updated_at: now() }
        return { next: { ...value, key, ...(hash === undefined ? {} : { hash }) }, result: key }
      },
      () => {
        throw fail('api_key_not_found', id)
      },
    )
  }
}

/**
 * The admin key of `TROUPE_ADMIN_KEY_FILE`, stored when missing: its id comes from its hash, so every host started
 * with the file stores the same record once, and one revoked stays revoked. Returns its id.
 */
export async function ensureFileKey(kv: KV, clusterKey: Uint8Array, file: string): Promise<string> {
  const store = new RecordStore<StoredKey>(kv)
  const secret = readAdminKeyFile(file)
  const hash = hashOf(clusterKey, secret)
  const id = idFromKey('apikey', 'TROUPE_ADMIN_KEY_FILE', hash)
  if (await store.get(keyKey(id))) return id
  const t = now()
  const key: ApiKey = {
    id,
    type: 'api_key',
    name: 'admin (TROUPE_ADMIN_KEY_FILE)',
    workspace_id: DEFAULT_WORKSPACE,
    scope: 'admin',
    hint: hintOf(secret),
    limits: { ...DEFAULT_KEY_LIMITS },
    created_at: t,
    updated_at: t,
    expires_at: null,
    revoked_at: null,
    rotated_at: null,
  }
  // Another host with the same file stored it first: the same record.
  await store.create(keyKey(id), { key, hash })
  return id
}

/** The key in `TROUPE_ADMIN_KEY_FILE`: one line of at least 32 characters, no spaces; anything else stops start-up, named. */
export function readAdminKeyFile(file: string): string {
  let text: string
  try {
    text = readFileSync(file, 'utf8').trim()
  } catch (err) {
    throw new Error(`TROUPE_ADMIN_KEY_FILE=${file}: ${(err as Error).message}`)
  }
  if (text.length < 32 || text.length > 512 || /\s/.test(text)) {
    throw new Error(`TROUPE_ADMIN_KEY_FILE=${file}: the file must hold one key of 32 to 512 characters without spaces (e.g. openssl rand -base64 32)`)
  }
  return text
}
