import { type } from 'arktype'
import { fail } from '../errors/fail.js'
import { lazy } from './lazy.js'

/**
 * arktype takes an array for an object whose keys are all optional (an array has no required key missing):
 * `metadata: ["x"]` would be stored as `{"0":"x"}`. Every such object narrows with this.
 */
export const notArray = (v: object, ctx: { reject: (r: { expected: string; actual: string }) => false }) =>
  !Array.isArray(v) || ctx.reject({ expected: 'an object', actual: 'an array' })

/** The vendor's limit on metadata pairs, on create and after any patch. */
export const MAX_METADATA_KEYS = 16

/** Metadata on create: at most 16 pairs, keys ≤ 64 characters, values ≤ 512 (the vendor's limits). */
export const Metadata = lazy(() =>
  type({ '[string]': 'string <= 512' }).narrow((m, ctx) => {
    if (Array.isArray(m)) return notArray(m, ctx)
    const keys = Object.keys(m)
    if (keys.length > MAX_METADATA_KEYS) return ctx.reject({ expected: `at most ${MAX_METADATA_KEYS} keys`, actual: `${keys.length}` })
    const long = keys.find((k) => k.length === 0 || k.length > 64)
    if (long !== undefined) return ctx.reject({ expected: 'keys of 1 to 64 characters', actual: JSON.stringify(long) })
    return true
  }),
)

/** Metadata on update: a per-key patch where null deletes a key. */
export const MetadataPatch = lazy(() =>
  type({ '[string]': 'string <= 512 | null' }).narrow((m, ctx) => {
    if (Array.isArray(m)) return notArray(m, ctx)
    const long = Object.keys(m).find((k) => k.length === 0 || k.length > 64)
    if (long !== undefined) return ctx.reject({ expected: 'keys of 1 to 64 characters', actual: JSON.stringify(long) })
    return true
  }),
)

/** Applies a metadata patch; `deleteEmpty` also drops keys set to "" (environments). A result over the limit is a 400. */
export function patchMetadata(current: Record<string, string>, patch: Record<string, string | null>, deleteEmpty = false): Record<string, string> {
  // A Map and fromEntries: every key is an own property, `__proto__` included (assigning it would not be).
  const next = new Map(Object.entries(current))
  for (const [k, v] of Object.entries(patch)) {
    if (v === null || (deleteEmpty && v === '')) next.delete(k)
    else next.set(k, v)
  }
  if (next.size > MAX_METADATA_KEYS) throw fail('metadata_too_many_keys', MAX_METADATA_KEYS, next.size)
  return Object.fromEntries(next)
}

/** A field that is known but never accepted here: a 400 naming it and saying why (`problem`). */
export const refused = (problem: string) => type('unknown').narrow((_v, ctx): _v is never => ctx.reject({ problem }))

export const sameJson = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b)

// Query strings arrive as strings; these schemas parse and bound them with messages naming the parameter.

export const limitParam = (max: number) => type('string.integer.parse').pipe(type(`1 <= number <= ${max}`))

export const boolParam = lazy(() => type("'true' | 'false'").pipe((s) => s === 'true'))

export const timestampParam = lazy(() => type('string.date.iso.parse'))

export const pageParam = lazy(() => type('string'))

/** An absolute http or https URL (MCP servers, image and document sources). */
export const HttpUrl = lazy(() =>
  type('string').narrow((s, ctx) => {
    let u: URL
    try {
      u = new URL(s)
    } catch {
      return ctx.reject({ expected: 'an http or https URL', actual: JSON.stringify(s) })
    }
    return u.protocol === 'http:' || u.protocol === 'https:' || ctx.reject({ expected: 'an http or https URL', actual: JSON.stringify(s) })
  }),
)
