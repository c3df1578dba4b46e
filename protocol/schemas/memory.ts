import { type } from 'arktype'
import { memoryContentProblem, memoryPathProblem, memoryPrefixProblem, MAX_PATH_SEGMENTS } from '../memory-rules.js'
import { Metadata, MetadataPatch, boolParam, limitParam, notArray, pageParam, timestampParam } from './common.js'
import { MemoryId, SessionId } from './ids.js'
import { lazy } from './lazy.js'
import { listOf } from './list.js'

/**
 * Memory stores, memories and memory versions on the wire (WIRE §16, the official client's `beta.memoryStores`,
 * `.memories`, `.memoryVersions`). Shapes and the path and content rules (protocol/memory-rules.ts); whether a path is
 * free, a precondition holds or the store is archived are the store's owner's.
 */

/** Who made a change (the client's `BetaManagedAgentsActor`; this server records `api_actor` and `session_actor`). */
export type MemoryActor =
  | { type: 'api_actor'; api_key_id: string }
  | { type: 'session_actor'; session_id: string }
  | { type: 'user_actor'; user_id: string }
  | { type: 'service_account_actor'; service_account_id: string }

export interface MemoryStore {
  id: string
  type: 'memory_store'
  name: string
  /** "" when unset. */
  description: string
  metadata: Record<string, string>
  created_at: string
  updated_at: string
  archived_at: string | null
}

export interface Memory {
  id: string
  type: 'memory'
  memory_store_id: string
  path: string
  /** null with `view=basic`. */
  content: string | null
  content_sha256: string
  content_size_bytes: number
  memory_version_id: string
  created_at: string
  updated_at: string
}

export interface MemoryPrefix {
  type: 'memory_prefix'
  /** With its trailing `/`. */
  path: string
}

export type MemoryOperation = 'created' | 'modified' | 'deleted'

export interface MemoryVersion {
  id: string
  type: 'memory_version'
  memory_id: string
  memory_store_id: string
  operation: MemoryOperation
  created_at: string
  /** null with `view=basic`, on a `deleted` version and once redacted. */
  content: string | null
  content_sha256: string | null
  content_size_bytes: number | null
  /** null if and only if redacted. */
  path: string | null
  created_by: MemoryActor
  redacted_at: string | null
  redacted_by: MemoryActor | null
}

/** A string checked by one of the rules: arktype's message is the field's name, then the rule it breaks. */
const checked = (why: (s: string) => string | undefined) =>
  type('string').narrow((s, ctx) => {
    const problem = why(s)
    return problem === undefined || ctx.reject({ problem })
  })

/** A memory's path: `/`-rooted, 1–20 segments, at most 1,024 bytes, NFC, no control or format characters. */
export const MemoryPath = lazy(() => checked(memoryPathProblem))
/** A list's `path_prefix`: a path's leading segments and a trailing `/`. */
export const MemoryPathPrefix = lazy(() => checked(memoryPrefixProblem))
/** A memory's content: at most 100 kB of UTF-8. */
export const MemoryContent = lazy(() => checked(memoryContentProblem))
export const ContentSha256 = lazy(() => type(/^[0-9a-f]{64}$/).describe('64 lowercase hexadecimal characters (a SHA-256)'))
const StoreName = lazy(() =>
  type('1 <= string <= 255').narrow(
    (s, ctx) => !/\p{Cc}/u.test(s) || ctx.reject({ expected: 'a name without control characters', actual: JSON.stringify(s.slice(0, 64)) }),
  ),
)
const Description = lazy(() => type('string <= 1024'))
const View = lazy(() => type("'basic' | 'full'"))

export const MemoryStoreCreate = lazy(() => type({ '+': 'reject', name: StoreName, 'description?': Description, 'metadata?': Metadata }))

export const MemoryStoreUpdate = lazy(() =>
  type({ '+': 'reject', 'name?': StoreName.or('null'), 'description?': Description.or('null'), 'metadata?': MetadataPatch.or('null') }).narrow(notArray),
)

export const MemoryStoreListQuery = lazy(() =>
  type({
    'created_at[gte]?': timestampParam,
    'created_at[lte]?': timestampParam,
    'include_archived?': boolParam,
    'limit?': limitParam(100),
    'page?': pageParam,
  }),
)

export const MemoryViewQuery = lazy(() => type({ 'view?': View }))

export const MemoryCreate = lazy(() => type({ '+': 'reject', path: MemoryPath, content: MemoryContent.or('null') }))

const Precondition = lazy(() => type({ '+': 'reject', type: "'content_sha256'", 'content_sha256?': ContentSha256 }))

export const MemoryUpdate = lazy(() =>
  type({ '+': 'reject', 'content?': MemoryContent.or('null'), 'path?': MemoryPath.or('null'), 'precondition?': Precondition }).narrow(notArray),
)

export const MemoryListQuery = lazy(() =>
  type({
    'depth?': type('string.integer.parse').pipe(type(`0 <= number <= ${MAX_PATH_SEGMENTS}`)),
    'path_prefix?': MemoryPathPrefix,
    'view?': View,
    'limit?': limitParam(100),
    'page?': pageParam,
  }),
)

export const MemoryDeleteQuery = lazy(() => type({ 'expected_content_sha256?': ContentSha256 }))

export const MemoryVersionListQuery = lazy(() =>
  type({
    'api_key_id?': 'string <= 128',
    'created_at[gte]?': timestampParam,
    'created_at[lte]?': timestampParam,
    'memory_id?': MemoryId,
    'operation?': "'created' | 'modified' | 'deleted'",
    'service_account_id?': 'string <= 128',
    'session_id?': SessionId,
    'view?': View,
    'limit?': limitParam(100),
    'page?': pageParam,
  }),
)

/** Internal (sessions, issue 42 point 4): a session's store attachment, taken at its creation and dropped at its deletion. */
export const MemoryStoreAttachInput = lazy(() => type({ '+': 'reject', session_id: SessionId }))

/**
 * Internal (sessions): the changes one tool call made under a `read_write` mount, each applied on its own as a version
 * by `session_actor`, last writer wins (no precondition): `put` writes a path (created or modified), `delete` removes
 * one, `rename` moves one. Paths and content are checked by the owner (a file a session wrote is not a request).
 */
export const MemoryApplyInput = lazy(() =>
  type({
    '+': 'reject',
    session_id: SessionId,
    changes: listOf(
      type({ '+': 'reject', type: "'put'", path: 'string', content: 'string' }).or({ '+': 'reject', type: "'delete'", path: 'string' }).or({
        '+': 'reject',
        type: "'rename'",
        from: 'string',
        to: 'string',
      }),
      { max: 10_000 },
    ),
  }),
)

/** Internal (sessions): `since`, the token of the index a mount holds; the same token back means nothing changed. */
export const MemoryIndexInput = lazy(() => type({ '+': 'reject', 'since?': 'string <= 64' }))

export type MemoryStoreListInput = typeof MemoryStoreListQuery.infer
export type MemoryListInput = typeof MemoryListQuery.infer
export type MemoryVersionListInput = typeof MemoryVersionListQuery.infer
export type MemoryChange = (typeof MemoryApplyInput.infer)['changes'][number]
