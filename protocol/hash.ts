import { createHash } from 'node:crypto'

/** FNV-1a (32-bit): stable across processes and languages, cheap, well spread for ULID-based ids. */
export function fnv1a(s: string): number {
  let h = 0x811c9dc5
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i)
    h = Math.imul(h, 0x01000193)
  }
  return h >>> 0
}

/** A short digest of a value's JSON (SHA-256, 96 bits, base64url): tells two requests apart, without spaces. */
export function fingerprint(value: unknown): string {
  return createHash('sha256')
    .update(JSON.stringify(value) ?? '')
    .digest('base64url')
    .slice(0, 16)
}
