import { type } from 'arktype'
import { invalidRequest } from '../errors.js'

/** The vendor's limit on metadata pairs, on create and after any patch. */
export const MAX_METADATA_KEYS = 16

/** Metadata on create: at most 16 pairs, keys ≤ 64 characters, values ≤ 512 (the vendor's limits). */
export const Metadata = type({ '[string]': 'string <= 512' }).narrow((m, ctx) => {
  const keys = Object.keys(m)
  if (keys.length > MAX_METADATA_KEYS) return ctx.reject({ expected: `at most ${MAX_METADATA_KEYS} keys`, actual: `${keys.length}` })
  const long = keys.find((k) => k.length === 0 || k.length > 64)
  if (long !== undefined) return ctx.reject({ expected: 'keys of 1 to 64 characters', actual: JSON.stringify(long) })
  return true
})

/** Metadata on update: a per-key patch where null deletes a key. */
export const MetadataPatch = type({ '[string]': 'string <= 512 | null' }).narrow((m, ctx) => {
  const long = Object.keys(m).find((k) => k.length === 0 || k.length > 64)
  if (long !== undefined) return ctx.reject({ expected: 'keys of 1 to 64 characters', actual: JSON.stringify(long) })
  return true
})

/** Applies a metadata patch; `deleteEmpty` also drops keys set to "" (environments). A result over the limit is a 400. */
export function patchMetadata(
  current: Record<string, string>,
  patch: Record<string, string | null>,
  deleteEmpty = false,
): Record<string, string> {
  const next = { ...current }
  for (const [k, v] of Object.entries(patch)) {
    if (v === null || (deleteEmpty && v === '')) delete next[k]
    else next[k] = v
  }
  const n = Object.keys(next).length
  if (n > MAX_METADATA_KEYS) throw invalidRequest(`metadata: at most ${MAX_METADATA_KEYS} keys (this patch would leave ${n})`)
  return next
}

export const sameJson = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b)

// Query strings arrive as strings; these schemas parse and bound them with messages naming the parameter.

export const limitParam = (max: number) => type('string.integer.parse').pipe(type(`1 <= number <= ${max}`))

export const boolParam = type("'true' | 'false'").pipe((s) => s === 'true')

export const timestampParam = type('string.date.iso.parse')

export const pageParam = type('string')

/** An absolute http or https URL (MCP servers, image and document sources). */
export const HttpUrl = type('string').narrow((s, ctx) => {
  let u: URL
  try {
    u = new URL(s)
  } catch {
    return ctx.reject({ expected: 'an http or https URL', actual: JSON.stringify(s) })
  }
  return u.protocol === 'http:' || u.protocol === 'https:' || ctx.reject({ expected: 'an http or https URL', actual: JSON.stringify(s) })
})
