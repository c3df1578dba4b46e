import { fail } from './errors/fail.js'
import { fnv1a } from './hash.js'

/**
 * Opaque page cursors bound to the resource and the normalised filters they were issued for. Reusing one
 * with other filters is a 400, as the spec requires; the official client re-sends the whole original query
 * with the cursor, so honest paging always matches.
 */
export interface Cursor<P> {
  /** Position after which the next page starts. */
  after: P
}

function fingerprint(resource: string, filters: Record<string, unknown>): string {
  const keys = Object.keys(filters)
    .filter((k) => filters[k] !== undefined)
    .sort()
  return `${resource}|${keys.map((k) => `${k}=${JSON.stringify(filters[k])}`).join('&')}`
}

const hash = (s: string): string => fnv1a(s).toString(36)

export function encodeCursor<P>(resource: string, filters: Record<string, unknown>, after: P): string {
  const json = JSON.stringify({ f: hash(fingerprint(resource, filters)), a: after })
  return Buffer.from(json).toString('base64url')
}

/** A position that is a sequence or version number. */
export const isSeq = (a: unknown): a is number => Number.isSafeInteger(a) && (a as number) >= 0

/** A position that is a record's place in a list: its creation time and id (plus whatever else it says). */
export const isRecordPosition = (a: unknown): a is { id: string; created_at: string } =>
  typeof a === 'object' &&
  a !== null &&
  !Array.isArray(a) &&
  typeof (a as { id?: unknown }).id === 'string' &&
  (a as { id: string }).id.length <= 256 &&
  typeof (a as { created_at?: unknown }).created_at === 'string' &&
  (a as { created_at: string }).created_at.length <= 64

/**
 * `page` empty or absent means the first page (the client sends `page=` for null). The fingerprint is a
 * checksum, not a signature (anyone can compute it): `valid` checks the position's shape, since it comes
 * from the client like any other input.
 */
export function decodeCursor<P>(resource: string, filters: Record<string, unknown>, page: string | undefined, valid: (a: unknown) => a is P): P | undefined {
  if (page === undefined || page === '') return undefined
  let parsed: { f?: unknown; a?: unknown }
  try {
    parsed = JSON.parse(Buffer.from(page, 'base64url').toString('utf8'))
  } catch {
    throw fail('invalid_cursor')
  }
  if (!parsed || typeof parsed !== 'object' || typeof parsed.f !== 'string' || parsed.a === undefined) throw fail('invalid_cursor')
  if (parsed.f !== hash(fingerprint(resource, filters))) {
    throw fail('cursor_filter_mismatch')
  }
  if (!valid(parsed.a)) throw fail('invalid_cursor')
  return parsed.a
}
