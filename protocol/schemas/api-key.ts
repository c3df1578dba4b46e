import { type } from 'arktype'
import type { Caller } from '../envelope.js'
import { limitParam, notArray, pageParam } from './common.js'
import { lazy } from './lazy.js'

/** What a key may do: `full` every API route, `read_only` GET and HEAD only, `admin` everything and the admin routes. */
export type KeyScope = 'full' | 'read_only' | 'admin'
export const KEY_SCOPES: readonly KeyScope[] = ['full', 'read_only', 'admin']

/** The workspace every key belongs to until workspaces are served: what is stored today lives there. */
export const DEFAULT_WORKSPACE = 'wrkspc_default'

/** A key's limits, each across the whole cluster, enforced by every gateway (gateway/rate-limit.ts); 0 is no limit. */
export interface KeyLimits {
  requests_per_second: number
  /** Requests a key may make at once above its steady rate. */
  burst: number
  /** Sessions the key created that run at once. */
  concurrent_sessions: number
  upload_bytes_per_minute: number
}

/** Defaults of a key's limits, documented in the README. */
export const DEFAULT_KEY_LIMITS: Readonly<KeyLimits> = Object.freeze({
  requests_per_second: 50,
  burst: 100,
  concurrent_sessions: 50,
  upload_bytes_per_minute: 1024 * 1024 * 1024,
})

/** An API key as the admin routes and the CLI show it: never the key, only a hint of it. */
export interface ApiKey {
  id: string
  type: 'api_key'
  name: string
  workspace_id: string
  scope: KeyScope
  /** The key's first characters and its last four: enough to tell keys apart, nothing to guess one from. */
  hint: string
  limits: KeyLimits
  created_at: string
  updated_at: string
  expires_at: string | null
  revoked_at: string | null
  /** When its secret was last replaced (`rotate`). */
  rotated_at: string | null
}

/** What create and rotate answer: the key itself, shown this once. */
export interface ApiKeyWithSecret extends ApiKey {
  key: string
}

const LimitValue = lazy(() => type('number.integer >= 0').narrow((n, ctx) => n <= Number.MAX_SAFE_INTEGER || ctx.reject({ expected: 'a safe integer' })))

export const KeyLimitsPatch = lazy(() =>
  type({
    '+': 'reject',
    'requests_per_second?': LimitValue,
    'burst?': LimitValue,
    'concurrent_sessions?': LimitValue,
    'upload_bytes_per_minute?': LimitValue,
  }).narrow(notArray),
)

const WorkspaceId = lazy(() => type(/^wrkspc_[A-Za-z0-9][A-Za-z0-9_-]{0,99}$/).describe('a workspace id (wrkspc_…)'))

/** The longest expiry a key may be given from now: ten years. */
export const MAX_EXPIRES_IN_S = 10 * 365 * 24 * 3600

export const ApiKeyCreate = lazy(() =>
  type({
    '+': 'reject',
    name: '0 < string <= 256',
    'workspace_id?': WorkspaceId,
    'scope?': "'full' | 'read_only' | 'admin'",
    /** Seconds from now; absent or null: the key never expires. */
    'expires_in_seconds?': type(`1 <= number.integer <= ${MAX_EXPIRES_IN_S}`).or('null'),
    'limits?': KeyLimitsPatch,
  }),
)

export const ApiKeyUpdate = lazy(() =>
  type({
    '+': 'reject',
    'name?': '0 < string <= 256',
    'expires_in_seconds?': type(`1 <= number.integer <= ${MAX_EXPIRES_IN_S}`).or('null'),
    'limits?': KeyLimitsPatch,
  }).narrow(notArray),
)

export const ApiKeyListQuery = lazy(() =>
  type({
    'limit?': limitParam(1000),
    'page?': pageParam,
  }),
)

export type ApiKeyCreateInput = typeof ApiKeyCreate.infer
export type ApiKeyUpdateInput = typeof ApiKeyUpdate.infer

/** A key as every gateway checks it, from its watched copy of the keys (gateway/auth.ts). */
export interface CallerKey {
  id: string
  scope: KeyScope
  workspace_id: string
  /** Epoch ms; Infinity when it never expires. */
  expiresAt: number
  revoked: boolean
  limits: KeyLimits
  /** What each actor request it makes carries (`ActorRequest.caller`), made once per key rather than per request. */
  caller: Caller
}
