/**
 * The deepest nesting a request body may have. Deeper JSON is refused with a 400 before it is parsed:
 * msgpackr, arktype and structured cloning all recurse over values and overflow the stack on deep ones
 * (5,000 levels was enough), and no request of the API nests beyond a few dozen levels (a tool's JSON
 * Schema is the deepest). Documented in README ("Limits").
 */
export const MAX_JSON_DEPTH = 64

const OPEN_BRACE = 0x7b
const OPEN_BRACKET = 0x5b
const CLOSE_BRACE = 0x7d
const CLOSE_BRACKET = 0x5d
const QUOTE = 0x22
const BACKSLASH = 0x5c

/**
 * Whether the JSON text in `bytes` nests objects and arrays deeper than `limit`. One pass with a counter,
 * no recursion and no allocation, so 100,000 levels cost what 100,000 bytes cost. Brackets inside strings do
 * not count. Malformed JSON is not this check's concern: JSON.parse reports it after.
 */
export function jsonDepthExceeds(bytes: Uint8Array, limit: number = MAX_JSON_DEPTH): boolean {
  let depth = 0
  const n = bytes.length
  for (let i = 0; i < n; i++) {
    const c = bytes[i]!
    if (c === QUOTE) {
      // Jump to the closing quote natively (bodies are mostly long strings): a quote preceded by an odd
      // number of backslashes is escaped, so look further.
      for (;;) {
        const q = bytes.indexOf(QUOTE, i + 1)
        if (q < 0) return false
        let k = q - 1
        while (bytes[k] === BACKSLASH) k--
        i = q
        if ((q - 1 - k) % 2 === 0) break
      }
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > limit) return true
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      depth--
    }
  }
  return false
}
