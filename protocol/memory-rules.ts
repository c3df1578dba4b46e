import { createHash } from 'node:crypto'

/**
 * The rules of memories (WIRE §16, the official client's `memoryStores.memories` docs), pure so that the gateway's
 * schemas, the store's owner and a session that finds files in its mount (issue 42 point 4) apply the same ones.
 */

/** A memory's content, in UTF-8 bytes (100 kB). */
export const MAX_CONTENT_BYTES = 102_400
/** A path, in UTF-8 bytes. */
export const MAX_PATH_BYTES = 1024
/** Segments of a path. */
export const MAX_PATH_SEGMENTS = 20

// A surrogate without its pair: no UTF-8 encodes it, so its bytes (and their SHA-256) would not be the text sent.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/
const wellFormed = (s: string) => !LONE_SURROGATE.test(s)

// Control (Cc) and format (Cf) characters, and the line and paragraph separators.
const FORBIDDEN = /[\p{Cc}\p{Cf}\u2028\u2029]/u

/** Why `path` is not a memory path (worded to follow the field name), or undefined when it is one. */
export function memoryPathProblem(path: string): string | undefined {
  if (!path.startsWith('/')) return 'must start with /'
  if (!wellFormed(path)) return 'must be valid Unicode (it holds a lone surrogate)'
  if (FORBIDDEN.test(path)) return 'must not contain control characters, format characters or the separators U+2028 and U+2029'
  if (path.normalize('NFC') !== path) return 'must be in Unicode Normalization Form C'
  const bytes = Buffer.byteLength(path)
  if (bytes > MAX_PATH_BYTES) return `must be at most ${MAX_PATH_BYTES} bytes (was ${bytes})`
  const segments = path.slice(1).split('/')
  if (segments.length > MAX_PATH_SEGMENTS) return `must have at most ${MAX_PATH_SEGMENTS} segments (had ${segments.length})`
  if (segments.some((s) => s === '')) return 'must not have an empty segment (no // and no trailing /)'
  if (segments.some((s) => s === '.' || s === '..')) return 'must not have a . or .. segment'
  return undefined
}

/** Why `prefix` is not a list's `path_prefix` (a path's leading segments and a `/`), or undefined. */
export function memoryPrefixProblem(prefix: string): string | undefined {
  if (!prefix.endsWith('/')) return 'must end with /'
  if (prefix === '/') return undefined
  return memoryPathProblem(prefix.slice(0, -1))
}

/** Why `content` cannot be a memory's content, or undefined. */
export function memoryContentProblem(content: string): string | undefined {
  if (!wellFormed(content)) return 'must be valid Unicode (it holds a lone surrogate)'
  const bytes = Buffer.byteLength(content)
  if (bytes > MAX_CONTENT_BYTES) return `must be at most ${MAX_CONTENT_BYTES} bytes of UTF-8 (was ${bytes})`
  return undefined
}

/** Lowercase hex SHA-256 of the UTF-8 bytes: what `content_sha256` and the preconditions compare. */
export const contentSha256 = (content: string): string => createHash('sha256').update(content, 'utf8').digest('hex')

/**
 * Orders paths by code point, which is the order of their UTF-8 bytes (JavaScript's `<` compares UTF-16 code units,
 * which puts U+E000–U+FFFF after the astral planes). Every path with a given prefix sorts together either way.
 */
export function comparePaths(a: string, b: string): number {
  const n = Math.min(a.length, b.length)
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i)
    const y = b.charCodeAt(i)
    if (x !== y) return rank(x) - rank(y)
  }
  return a.length - b.length
}

// Surrogates (astral code points) above U+E000–U+FFFF, keeping each group's own order.
const rank = (u: number) => (u >= 0xe000 ? u - 0x800 : u >= 0xd800 ? u + 0x2000 : u)

/** The longest slug, in characters: a mount's directory name stays far below NAME_MAX. */
const MAX_SLUG = 64

/**
 * The directory a store mounts at under /mnt/memory: its name lowercased, each run of other than [a-z0-9] one hyphen,
 * none at either end, at most 64 characters; `memory` when nothing is left. Only [a-z0-9-], so it is safe as a path
 * segment wherever it goes (the sandbox's bind, the host directory).
 */
export const memoryStoreSlug = (name: string): string =>
  name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .slice(0, MAX_SLUG)
    .replace(/^-+|-+$/g, '') || 'memory'

/** Whether `s` is a slug `memoryStoreSlug` (or a session's de-duplication of two, `<slug>-2`) can make. */
export const isMemorySlug = (s: string): boolean => /^[a-z0-9](?:[a-z0-9-]{0,70}[a-z0-9])?$/.test(s)
