import { createHash, getRandomValues } from 'node:crypto'
import { monotonicFactory } from 'ulid'

// ulid's default generator asks the system for one random byte per character (16 calls per id); a pool
// refilled 4 KiB at a time gives the same randomness for a fraction of the cost (ids are minted per event).
const pool = new Uint32Array(1024)
let next = pool.length
const random = () => {
  if (next === pool.length) {
    getRandomValues(pool)
    next = 0
  }
  return pool[next++]! / 2 ** 32
}

// Monotonic: ids made in the same millisecond still sort in creation order.
const ulid = monotonicFactory(random)

export type IdPrefix =
  | 'agent'
  | 'env'
  | 'sesn'
  | 'sevt'
  | 'sthr'
  | 'req'
  | 'depl'
  | 'drun'
  | 'whep'
  | 'whe'
  | 'skill'
  | 'file'
  | 'outc'
  | 'vlt'
  | 'vcrd'
  | 'sesrsc'
  | 'host'
  | 'memstore'
  | 'mem'
  | 'memver'
  | 'drm'
  | 'work'
  | 'apikey'
  | 'wrkspc'

/** A prefixed, time-ordered id: `agent_01JX…`. */
export const newId = (prefix: IdPrefix | (string & {})): string => `${prefix}_${ulid()}`

/** What follows the prefix of a minted id (26 Crockford base32 characters, time-ordered), for names that extend an id. */
export const newSuffix = (): string => ulid()

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ'

/**
 * The id a create with an Idempotency-Key gets: derived from the key (and what is created), so a retry of the
 * create names the same resource and finds it stored. Shaped like a minted id (26 Crockford base32 characters),
 * but not time-ordered.
 */
export function idFromKey(prefix: IdPrefix | (string & {}), scope: string, key: string): string {
  const digest = createHash('sha256').update(`${scope}\n${key}`).digest()
  let out = ''
  for (let i = 0; i < 26; i++) out += CROCKFORD[digest[i]! & 31]
  return `${prefix}_${out}`
}

/**
 * A session's primary thread: its id is the session's with the thread prefix, so sessions stored before threads
 * existed have one, stable, without a write.
 */
export const primaryThreadId = (sessionId: string): string => `sthr_${sessionId.slice(sessionId.indexOf('_') + 1)}`

/** The token of a thread's subjects (`troupe.events.<sid>.<token>`): `primary` for the primary, a child's own id. */
export const threadToken = (sessionId: string, threadId: string): string => (threadId === primaryThreadId(sessionId) ? 'primary' : threadId)

/** The longest id accepted anywhere, prefix included (ours are the prefix and 27 characters). */
export const ID_MAX_LENGTH = 128

// Letters, digits, `_` and `-` after the prefix: every such string is a valid NATS subject token and KV key
// (no `.`, `*`, `>`, whitespace or non-ASCII), and ids of the vendor's own shape pass, so a client that
// sends one gets a 404 for an id we do not hold rather than a 400.
const ID_BODY = /^[A-Za-z0-9][A-Za-z0-9_-]*$/

/**
 * Whether `id` is shaped like an id of this kind: `<prefix>_` then letters, digits, `_` or `-`, at most
 * ID_MAX_LENGTH characters. The one check every id from a request passes before it becomes part of a NATS
 * subject or key; a well-formed id that does not exist is then a 404, a malformed one never reaches the store.
 */
export const isId = (prefix: IdPrefix | (string & {}), id: string): boolean =>
  id.length <= ID_MAX_LENGTH &&
  id.length > prefix.length + 1 &&
  id.startsWith(prefix) &&
  id.charCodeAt(prefix.length) === 95 /* _ */ &&
  ID_BODY.test(id.slice(prefix.length + 1))
