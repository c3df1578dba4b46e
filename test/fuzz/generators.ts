import type { Rng } from './rng.js'

/** A hostile value with a short label for the report (the value itself may be 10 KB or unprintable). */
export interface Labelled<T> {
  value: T
  label: string
}

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ'

/** An id shaped exactly like ours that names nothing: passes every shape check, must be a clean 404. */
export function wellFormedId(rng: Rng, prefix: string): string {
  let s = ''
  for (let i = 0; i < 26; i++) s += CROCKFORD[rng.int(32)]
  return `${prefix}_${s}`
}

/**
 * Ids that are wrong in the ways that hurt: NATS subject tokens and wildcards (`.`, `*`, `>`, space), path
 * tricks (`..`, `%2F`), escapes that do not decode or decode to lone surrogates, non-ASCII, control bytes,
 * sizes far over any limit, and prefixes of another kind. `real` is a live id of the right kind, to build
 * near misses from.
 */
export function hostileId(rng: Rng, prefix: string, real: string, otherKinds: string[]): Labelled<string> {
  const p = `${prefix}_`
  const cases: Array<Labelled<string>> = [
    { value: '%', label: 'lone %' },
    { value: `${p}%`, label: 'trailing %' },
    { value: `${p}%zz`, label: 'bad escape' },
    { value: '%ED%A0%80', label: 'escaped lone surrogate' },
    { value: `${p}%ED%A0%80`, label: 'prefix + escaped lone surrogate' },
    { value: `${p}%FF%FE`, label: 'escaped invalid UTF-8' },
    { value: `${p}%00`, label: 'escaped NUL' },
    { value: `${p}%0D%0Ax-injected:%201`, label: 'escaped CRLF' },
    { value: 'a..b', label: 'a..b' },
    { value: `${p}a..b`, label: 'prefix + ..' },
    { value: `${p}a.b`, label: 'dot (subject token separator)' },
    { value: `${p}*`, label: 'prefix + *' },
    { value: `${p}>`, label: 'prefix + >' },
    { value: '>', label: '>' },
    { value: '*', label: '*' },
    { value: ' ', label: 'space' },
    { value: `${p} x`, label: 'prefix + space' },
    { value: `${p}%20`, label: 'escaped space' },
    { value: `${p}%09`, label: 'escaped tab' },
    { value: `${p}%2Fx`, label: 'escaped slash' },
    { value: `${p}%2E%2E`, label: 'escaped ..' },
    { value: 'ÿ', label: 'ÿ' },
    { value: `${p}ÿ`, label: 'prefix + ÿ' },
    { value: `${p}\uD800`, label: 'raw lone high surrogate' },
    { value: `${p}\uDFFF`, label: 'raw lone low surrogate' },
    { value: `${p}😀`, label: 'emoji' },
    { value: `${p}\u202E`, label: 'RTL override' },
    { value: `${p}${'A'.repeat(10 * 1024)}`, label: '10 KB id' },
    { value: `${p}${'A'.repeat(129)}`, label: '129-char id' },
    { value: p, label: 'bare prefix' },
    { value: real.toUpperCase(), label: 'real id upper-cased' },
    { value: real.toLowerCase(), label: 'real id lower-cased' },
    { value: `${real}x`, label: 'real id + x' },
    { value: real.slice(0, -1), label: 'real id minus one char' },
    { value: `${real}.x`, label: 'real id + .x' },
    { value: `${real}-`, label: 'real id + -' },
    { value: `${p}__proto__`, label: '__proto__' },
    { value: '__proto__', label: 'bare __proto__' },
    { value: 'constructor', label: 'constructor' },
    { value: `${p}$`, label: '$' },
    { value: `${p}{}`, label: 'braces' },
    { value: `${p}"'\\`, label: 'quotes and backslash' },
    { value: '0', label: '0' },
    { value: '-1', label: '-1' },
  ]
  for (const k of otherKinds) cases.push({ value: k, label: 'a real id of another kind' })
  return rng.pick(cases)
}

/**
 * How a hostile id is written into a path: as is (raw bytes on the request line, which may make it
 * malformed HTTP), percent-encoded, or double-encoded. Lone surrogates cannot be URI-encoded: they go raw.
 */
export function pathSegment(rng: Rng, id: string): Labelled<string> {
  const mode = rng.weighted([
    ['raw', 5],
    ['encoded', 3],
    ['double', 1],
  ] as const)
  if (mode === 'raw') return { value: id, label: 'raw' }
  try {
    const once = encodeURIComponent(id)
    return mode === 'encoded' ? { value: once, label: 'encoded' } : { value: encodeURIComponent(once), label: 'double-encoded' }
  } catch {
    return { value: id, label: 'raw (not encodable)' }
  }
}

/** Strings that are valid JSON strings but hostile content. */
export function hostileString(rng: Rng): Labelled<string> {
  return rng.pick<Labelled<string>>([
    { value: '', label: 'empty string' },
    { value: ' ', label: 'space' },
    { value: '\u0000', label: 'NUL' },
    { value: '\uD800', label: 'lone surrogate' },
    { value: 'a\uDC00b', label: 'lone low surrogate' },
    { value: '\r\n\r\nHTTP/1.1 200 OK', label: 'CRLF injection' },
    { value: '<script>', label: 'html' },
    { value: '${x}{{x}}%s%n', label: 'format strings' },
    { value: 'ÿ'.repeat(300), label: '300 ÿ' },
    { value: '😀'.repeat(600), label: '600 emoji' },
    { value: 'x'.repeat(513), label: '513 chars' },
    { value: 'x'.repeat(100_001), label: '100,001 chars' },
  ])
}

/**
 * The wrong-type replacements for one field, as raw JSON fragments (spliced into the body text, so a
 * fragment can be deeper than JSON.stringify would ever be asked to write).
 */
export function wrongValue(rng: Rng): Labelled<string> {
  const huge = rng.pick([10 * 1024, 100 * 1024, 1024 * 1024])
  return rng.weighted<Labelled<string>>([
    [{ value: 'null', label: 'null' }, 4],
    [{ value: '0', label: '0' }, 2],
    [{ value: '-1', label: '-1' }, 1],
    [{ value: '1.5', label: '1.5' }, 1],
    [{ value: '1e400', label: '1e400' }, 1],
    [{ value: '-0', label: '-0' }, 1],
    [{ value: '9007199254740993', label: '2^53+1' }, 1],
    [{ value: 'true', label: 'true' }, 2],
    [{ value: '"x"', label: 'string' }, 3],
    [{ value: '""', label: 'empty string' }, 2],
    [{ value: JSON.stringify('x'.repeat(huge)), label: `${huge}-char string` }, 1],
    [{ value: '[]', label: '[]' }, 3],
    [{ value: '["x"]', label: '["x"]' }, 2],
    [{ value: '[[[[[]]]]]', label: 'nested arrays' }, 2],
    [{ value: '[null]', label: '[null]' }, 1],
    [{ value: '{}', label: '{}' }, 3],
    [{ value: '{"type":{}}', label: '{"type":{}}' }, 1],
    [{ value: '{"__proto__":{"x":1}}', label: '__proto__ object' }, 1],
    [{ value: '{"constructor":{"prototype":{"x":1}}}', label: 'constructor.prototype object' }, 1],
    [{ value: JSON.stringify(hostileString(rng).value), label: 'hostile string' }, 2],
    [{ value: deepArrays(rng.pick([50, 500, 5000])), label: 'deep arrays' }, 1],
  ])
}

/** `[[[…]]]` n levels deep, built as text: a value this deep must never go through a recursive serialiser. */
export const deepArrays = (depth: number): string => '['.repeat(depth) + ']'.repeat(depth)

/** `{"a":{"a":…}}` n levels deep, as text. */
export const deepObjects = (depth: number): string => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`

/** Alternating `[{"a":[{"a":…}]}]`, as text. */
export const deepMixed = (depth: number): string => {
  const half = Math.ceil(depth / 2)
  return `${'[{"a":'.repeat(half)}null${'}]'.repeat(half)}`
}

/** Text that is not JSON, or is JSON only by a lenient reading (BOM, NaN, comments, trailing commas). */
export function malformedJson(rng: Rng, valid: string): Labelled<Buffer> {
  const cut = valid.length > 2 ? rng.between(1, valid.length - 1) : 1
  const cases: Array<Labelled<string | Buffer>> = [
    { value: valid.slice(0, cut), label: 'truncated' },
    { value: `${valid}garbage`, label: 'trailing garbage' },
    { value: valid + valid, label: 'two documents' },
    { value: `\uFEFF${valid}`, label: 'BOM' },
    { value: valid.replace(/"/g, "'"), label: 'single quotes' },
    { value: valid.replace(/}$/, ',}'), label: 'trailing comma' },
    { value: `/* c */${valid}`, label: 'comment' },
    { value: '{"a":NaN}', label: 'NaN' },
    { value: '{"a":Infinity}', label: 'Infinity' },
    { value: '{"a":undefined}', label: 'undefined' },
    { value: '{a:1}', label: 'unquoted key' },
    { value: '{"a":"\\x41"}', label: 'bad escape' },
    { value: '{"a":"\\u12"}', label: 'short unicode escape' },
    { value: '{"a":"unterminated', label: 'unterminated string' },
    { value: '{"a":"tab\there"}', label: 'raw control char in string' },
    { value: '{"a":01}', label: 'leading zero' },
    { value: '{"a":.5}', label: 'bare fraction' },
    { value: '{"a" 1}', label: 'missing colon' },
    { value: '{', label: '{' },
    { value: '}', label: '}' },
    { value: '[', label: '[' },
    { value: '"', label: '"' },
    { value: ' \t\r\n ', label: 'whitespace only' },
    { value: '\u0000', label: 'NUL byte' },
    { value: Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]), label: 'invalid UTF-8 in a string' },
    { value: Buffer.from([0xed, 0xa0, 0x80]), label: 'UTF-8 encoded surrogate' },
    { value: Buffer.concat([Buffer.from('{"name":"'), rng.bytes(64), Buffer.from('"}')]), label: 'random bytes in a string' },
    { value: rng.bytes(rng.between(1, 512)), label: 'random bytes' },
    { value: '{"a":1}'.repeat(1000), label: 'concatenated objects' },
    { value: `[${'1,'.repeat(10_000)}1`, label: 'unterminated long array' },
    { value: `{"a":"${'x'.repeat(100_000)}`, label: 'unterminated long string' },
    { value: '['.repeat(100_000), label: '100,000 open brackets' },
    { value: '{"a":'.repeat(50_000), label: '50,000 open objects' },
  ]
  const c = rng.pick(cases)
  return { value: typeof c.value === 'string' ? Buffer.from(c.value, 'utf8') : c.value, label: c.label }
}
