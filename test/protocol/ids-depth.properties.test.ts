import t, { type Test } from 'tap'
import fc from 'fast-check'
import { type } from 'arktype'
import { ID_MAX_LENGTH, isId, newId, type IdPrefix } from '../../protocol/ids.js'
import { idOf } from '../../protocol/schemas/ids.js'
import { jsonDepthExceeds } from '../../gateway/json-depth.js'

/** Runs a property and fails the tap test with fast-check's report (seed and shrunk counterexample) if it breaks. */
function holds<Ts extends [unknown, ...unknown[]]>(tt: Test, name: string, prop: fc.IProperty<Ts>, params: fc.Parameters<Ts> = {}) {
  const run = fc.check(prop, params)
  tt.notOk(run.failed, run.failed ? (fc.defaultReportMessage(run) ?? name) : name)
}

const PREFIXES: IdPrefix[] = [
  'agent',
  'env',
  'sesn',
  'sevt',
  'sthr',
  'req',
  'depl',
  'drun',
  'whep',
  'whe',
  'skill',
  'file',
  'outc',
  'vlt',
  'vcrd',
  'sesrsc',
  'host',
  'memstore',
]
const prefixArb = fc.constantFrom(...PREFIXES)
const ALLOWED = /^[A-Za-z0-9_-]$/
const accepts = (prefix: IdPrefix, s: string) => !(idOf(prefix)(s) instanceof type.errors)

// ----------------------------------------------------------------------------------------------- ids

t.test('ids: everything newId mints passes, for its own prefix and schema', async (t) => {
  holds(
    t,
    'minted ids pass',
    fc.property(prefixArb, fc.integer({ min: 1, max: 20 }), (prefix, n) => {
      for (let i = 0; i < n; i++) {
        const id = newId(prefix)
        if (!isId(prefix, id) || !accepts(prefix, id)) return false
      }
      return true
    }),
  )
})

t.test('ids: one character outside [A-Za-z0-9_-] anywhere after the prefix fails', async (t) => {
  const badChar = fc.oneof(
    fc.constantFrom('.', '*', '>', ' ', '\t', '\n', '\r', '\0', '\u00a0', '\u2028', '\ufeff', '%', '/', '\\', '"', 'ÿ', '\uD800', '\uDFFF', '😀'),
    fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }).filter((c) => !ALLOWED.test(c)),
  )
  holds(
    t,
    'bad character',
    fc.property(prefixArb, badChar, fc.nat(), (prefix, bad, at) => {
      const id = newId(prefix)
      const body = id.slice(prefix.length + 1)
      const pos = at % (body.length + 1)
      const hostile = `${prefix}_${body.slice(0, pos)}${bad}${body.slice(pos)}`
      return !isId(prefix, hostile) && !accepts(prefix, hostile)
    }),
    { numRuns: 300 },
  )
})

t.test('ids: an id minted for one prefix fails for every other', async (t) => {
  holds(
    t,
    'wrong prefix',
    fc.property(prefixArb, prefixArb, (minted, asked) => {
      fc.pre(minted !== asked)
      const id = newId(minted)
      return !isId(asked, id) && !accepts(asked, id)
    }),
    { numRuns: 300 },
  )
})

t.test('ids: prefix_ then allowed characters up to the length limit pass; longer, empty or bare fail', async (t) => {
  const allowedBody = fc.string({ unit: fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-'), minLength: 1, maxLength: 140 })
  holds(
    t,
    'shape',
    fc.property(prefixArb, allowedBody, (prefix, body) => {
      const id = `${prefix}_${body}`
      const ok = isId(prefix, id)
      if (ok !== accepts(prefix, id)) return false
      // Past the limit it must fail; within it, it must pass unless the lead chose to require more (an
      // alphanumeric first character): then only that may differ.
      if (id.length > ID_MAX_LENGTH) return !ok
      return ok || !/^[A-Za-z0-9]/.test(body)
    }),
    { numRuns: 300 },
  )
  for (const prefix of PREFIXES) {
    t.notOk(isId(prefix, `${prefix}_`), `${prefix}_ alone`)
    t.notOk(isId(prefix, prefix), `${prefix} alone`)
    t.notOk(isId(prefix, ''), 'empty')
    t.notOk(isId(prefix, `${prefix}_${'A'.repeat(ID_MAX_LENGTH)}`), 'over the limit')
  }
})

t.test('ids: the id schema refuses what is not a string', async (t) => {
  holds(
    t,
    'non-strings',
    fc.property(
      prefixArb,
      fc.anything().filter((x) => typeof x !== 'string'),
      (prefix, x) => idOf(prefix)(x) instanceof type.errors,
    ),
  )
})

// ------------------------------------------------------------------------------------------- JSON depth

/** The depth check under test: true when containers nest deeper than `limit`. */
const exceeds = jsonDepthExceeds

/** The reference: containers count one level each, scalars none (`1` is 0, `[]` is 1, `{"a":[1]}` is 2). */
function depthOf(v: unknown): number {
  if (Array.isArray(v)) return 1 + Math.max(0, ...v.map(depthOf))
  if (v !== null && typeof v === 'object') return 1 + Math.max(0, ...Object.values(v).map(depthOf))
  return 0
}

// Strings full of the characters a naive scanner would count: brackets, quotes, backslashes.
const trickyString = fc.string({ unit: fc.constantFrom('[', ']', '{', '}', '"', '\\', ',', ':', 'a', ' ', 'é', '\n'), maxLength: 12 })
const shallow = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer(),
  trickyString,
  fc.array(trickyString, { maxLength: 3 }),
  fc.dictionary(trickyString, trickyString, { maxKeys: 3, noNullPrototype: true }),
)

/**
 * A JSON value with a spine `depth` containers deep (arrays and objects at random), shallow siblings at each
 * level, and brackets and escaped quotes in the strings and keys along the way.
 */
const deepValue = fc.integer({ min: 0, max: 400 }).chain((depth) =>
  fc
    .tuple(shallow, fc.array(fc.tuple(fc.boolean(), trickyString, fc.array(shallow, { maxLength: 2 })), { minLength: depth, maxLength: depth }))
    .map(([leaf, levels]) => {
      let v: unknown = leaf
      for (const [asArray, key, siblings] of levels) {
        if (asArray) v = [...siblings, v]
        else v = { ...Object.fromEntries(siblings.map((s, i) => [`${key}${i}`, s])), [key]: v }
      }
      return v
    }),
)

t.test('json depth: agrees with a recursive depth for random values a few hundred deep', async (t) => {
  holds(
    t,
    'agrees',
    fc.property(deepValue, fc.integer({ min: -2, max: 2 }), fc.boolean(), (v, delta, pretty) => {
      const d = depthOf(v)
      const bytes = Buffer.from(pretty ? JSON.stringify(v, null, 1) : JSON.stringify(v))
      const limit = Math.max(0, d + delta)
      return exceeds(bytes, limit) === d > limit
    }),
    { numRuns: 100 },
  )
})

t.test('json depth: brackets inside strings, escaped quotes and backslashes do not count', async (t) => {
  const b = (s: string) => Buffer.from(s)
  t.notOk(exceeds(b(JSON.stringify('['.repeat(1000))), 1), 'a string of brackets is depth 0')
  t.notOk(exceeds(b(JSON.stringify({ '[[[[': '{{{{', k: ['"[[[', '\\', '\\"[['] })), 2), 'brackets in keys and values')
  t.ok(exceeds(b(JSON.stringify({ '[[[[': '{{{{', k: ['"[[[', '\\', '\\"[['] })), 1), 'the real depth is 2')
  t.notOk(exceeds(b('["\\\\", [1]]'), 2), 'a string ending in an escaped backslash closes')
  t.ok(exceeds(b('["\\\\", [[1]]]'), 2), '…and the brackets after it count')
  holds(
    t,
    'strings never count',
    fc.property(trickyString, fc.integer({ min: 0, max: 3 }), (s, n) => {
      const v = JSON.stringify('['.repeat(n) + JSON.stringify(s) + ']'.repeat(n))
      return !exceeds(b(v), 0)
    }),
    { numRuns: 300 },
  )
})

t.test('json depth: 100,000 levels are handled without a stack overflow', async (t) => {
  const n = 100_000
  t.ok(exceeds(Buffer.from('['.repeat(n) + ']'.repeat(n)), 64), 'arrays')
  t.ok(exceeds(Buffer.from(`${'{"a":'.repeat(n)}1${'}'.repeat(n)}`), 64), 'objects')
  t.ok(exceeds(Buffer.from('['.repeat(n)), 64), 'unclosed')
  t.notOk(exceeds(Buffer.from('['.repeat(n) + ']'.repeat(n)), n), 'exactly at a limit that high')
  t.ok(exceeds(Buffer.from('['.repeat(n) + ']'.repeat(n)), n - 1), 'one over it')
})

t.test('json depth: any bytes give an answer, never an exception', async (t) => {
  holds(
    t,
    'total',
    fc.property(fc.uint8Array({ maxLength: 2000 }), fc.nat({ max: 100 }), (bytes, limit) => typeof exceeds(bytes, limit) === 'boolean'),
    { numRuns: 300 },
  )
})
