import t, { type Test } from 'tap'
import fc from 'fast-check'
import { type } from 'arktype'
import { decodeCursor, encodeCursor, isRecordPosition, isSeq } from '../../protocol/cursor.js'
import { ApiError } from '../../protocol/errors/api-error.js'
import { MAX_METADATA_KEYS, Metadata, MetadataPatch, patchMetadata } from '../../protocol/schemas/common.js'

/** Runs a property and fails the tap test with fast-check's report (seed and shrunk counterexample) if it breaks. */
function holds<Ts extends [unknown, ...unknown[]]>(tt: Test, name: string, prop: fc.IProperty<Ts>, params: fc.Parameters<Ts> = {}) {
  const run = fc.check(prop, params)
  tt.notOk(run.failed, run.failed ? (fc.defaultReportMessage(run) ?? name) : name)
}

const isBadRequest = (e: unknown) => e instanceof ApiError && e.status === 400 && e.type === 'invalid_request_error'

/** Any string, with the ones that reach the decoder's later branches over-represented: base64url of JSON. */
const pageArb = fc.oneof(
  fc.string({ unit: 'binary' }),
  fc.string({ unit: fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_=+/') }),
  fc.jsonValue().map((v) => Buffer.from(JSON.stringify(v) ?? 'null').toString('base64url')),
  fc
    .record({ f: fc.oneof(fc.string(), fc.jsonValue()), a: fc.jsonValue() }, { requiredKeys: [] })
    .map((v) => Buffer.from(JSON.stringify(v)).toString('base64url')),
)

// Filters as the list routes hand them over: a few named values, some left undefined.
const filtersArb = fc.dictionary(
  fc.constantFrom('limit', 'order', 'agent_id', 'statuses', 'include_archived', 'created_at[gte]', 'types'),
  fc.option(fc.oneof(fc.string(), fc.integer(), fc.boolean(), fc.array(fc.string(), { maxLength: 3 })), { nil: undefined }),
  { noNullPrototype: true },
)

// The position validators the list routes use, and one that takes anything (to reach every other branch).
const anyPosition = (_a: unknown): _a is unknown => true
const VALIDATORS = { isSeq, isRecordPosition, anyPosition } as const
const validatorArb = fc.constantFrom(...(Object.keys(VALIDATORS) as Array<keyof typeof VALIDATORS>))

t.test('cursor: any page string decodes to a valid position or is a 400, nothing else', async (t) => {
  holds(
    t,
    'decode never throws anything but a 400',
    fc.property(fc.string(), filtersArb, pageArb, validatorArb, (resource, filters, page, v) => {
      const valid = VALIDATORS[v]
      try {
        const got = decodeCursor(resource, filters, page, valid)
        return got === undefined ? page === '' : valid(got)
      } catch (e) {
        return isBadRequest(e)
      }
    }),
    { numRuns: 500 },
  )
})

t.test('cursor: a forged cursor (right fingerprint, any position) decodes only to a valid position', async (t) => {
  holds(
    t,
    'positions are checked',
    fc.property(fc.string(), filtersArb, fc.jsonValue(), validatorArb, (resource, filters, after, v) => {
      const valid = VALIDATORS[v]
      try {
        const got = decodeCursor(resource, filters, encodeCursor(resource, filters, after), valid)
        return valid(after) && JSON.stringify(got) === JSON.stringify(after)
      } catch (e) {
        return !valid(after) && isBadRequest(e) && (e as ApiError).code === undefined
      }
    }),
    { numRuns: 500 },
  )
})

const positionArb = fc.oneof(
  fc.maxSafeNat().map((a) => ({ a: a as unknown, v: 'isSeq' as const })),
  fc
    .record({ id: fc.string({ maxLength: 256 }), created_at: fc.string({ maxLength: 64 }), seq: fc.nat() }, { requiredKeys: ['id', 'created_at'] })
    .map((a) => ({ a: a as unknown, v: 'isRecordPosition' as const })),
  fc.jsonValue().map((a) => ({ a, v: 'anyPosition' as const })),
)

t.test('cursor: encode then decode gives back the position, for the same resource and filters', async (t) => {
  holds(
    t,
    'round trip',
    fc.property(fc.string(), filtersArb, positionArb, (resource, filters, { a, v }) => {
      const page = encodeCursor(resource, filters, a)
      // A cursor travels in a query string unencoded by some clients: it must be URL-safe as it is.
      if (!/^[A-Za-z0-9_-]*$/.test(page)) return false
      return JSON.stringify(decodeCursor(resource, filters, page, VALIDATORS[v])) === JSON.stringify(a)
    }),
    { numRuns: 500 },
  )
})

t.test('cursor: a cursor used with other filters is a 400 cursor_filter_mismatch', async (t) => {
  const defined = (f: Record<string, unknown>) =>
    JSON.stringify(
      Object.entries(f)
        .filter(([, v]) => v !== undefined)
        .sort(([a], [b]) => a.localeCompare(b)),
    )
  holds(
    t,
    'mismatch',
    fc.property(fc.string(), filtersArb, filtersArb, positionArb, (resource, a, b, { a: after, v }) => {
      fc.pre(defined(a) !== defined(b))
      try {
        decodeCursor(resource, b, encodeCursor(resource, a, after), VALIDATORS[v])
        return false
      } catch (e) {
        return isBadRequest(e) && (e as ApiError).code === 'cursor_filter_mismatch'
      }
    }),
    { numRuns: 500 },
  )
})

t.test('cursor: absent or empty page is the first page', async (t) => {
  t.equal(decodeCursor('r', {}, undefined, isSeq), undefined)
  t.equal(decodeCursor('r', {}, '', isSeq), undefined)
})

// Keys and values around the limits, and keys that are special to JavaScript objects.
const keyArb = fc.oneof(
  { weight: 6, arbitrary: fc.string({ minLength: 1, maxLength: 8 }) },
  { weight: 1, arbitrary: fc.constantFrom('', 'x'.repeat(64), 'x'.repeat(65), '__proto__', 'constructor', 'toString', 'hasOwnProperty') },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', minLength: 60, maxLength: 70 }) },
)
const valueArb = fc.oneof(
  { weight: 6, arbitrary: fc.string({ maxLength: 10 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', minLength: 505, maxLength: 520 }) },
)
/** Objects as JSON.parse builds them (so `__proto__` is an own key, as it is in a request body). */
const asParsed = <T>(entries: Array<[string, T]>): Record<string, T> => JSON.parse(JSON.stringify(Object.fromEntries(entries.map(([k, v]) => [k, v]))))
const entriesOf = <T>(v: fc.Arbitrary<T>, maxLength: number) =>
  fc.uniqueArray(fc.tuple(keyArb, v), { maxLength, selector: ([k]) => k }).map((es) => ({ entries: es, obj: asParsed(es) }))

t.test('Metadata accepts exactly: ≤ 16 keys of 1–64 characters, string values ≤ 512', async (t) => {
  holds(
    t,
    'schema agrees with the rule',
    fc.property(entriesOf(valueArb, 20), ({ entries, obj }) => {
      const valid = entries.length <= MAX_METADATA_KEYS && entries.every(([k, v]) => k.length >= 1 && k.length <= 64 && v.length <= 512)
      const out = Metadata(obj)
      if (out instanceof type.errors) return !valid
      return valid && JSON.stringify(out) === JSON.stringify(obj)
    }),
    { numRuns: 500 },
  )
})

t.test('Metadata and MetadataPatch refuse arrays and values that are not strings', async (t) => {
  holds(
    t,
    'arrays',
    fc.property(
      fc.array(fc.oneof(fc.string(), fc.constant(null)), { maxLength: 20 }),
      (arr) => Metadata(arr) instanceof type.errors && MetadataPatch(arr) instanceof type.errors,
    ),
  )
  const wrong = fc.oneof(fc.integer(), fc.boolean(), fc.array(fc.string()), fc.dictionary(fc.string(), fc.string()), fc.double())
  holds(
    t,
    'non-string values',
    fc.property(entriesOf(valueArb, 6), fc.string({ minLength: 1, maxLength: 8 }), wrong, ({ obj }, key, bad) => {
      const withBad = { ...obj, [key]: bad }
      return Metadata(withBad) instanceof type.errors && MetadataPatch(withBad) instanceof type.errors
    }),
  )
  holds(
    t,
    'null only in a patch',
    fc.property(
      fc.string({ minLength: 1, maxLength: 8 }),
      (key) => Metadata(asParsed([[key, null]])) instanceof type.errors && !(MetadataPatch(asParsed([[key, null]])) instanceof type.errors),
    ),
  )
})

t.test('patchMetadata: null deletes, strings set, others stay, never over 16 keys without a 400', async (t) => {
  const currentArb = entriesOf(fc.string({ maxLength: 10 }), MAX_METADATA_KEYS)
  const patchArb = entriesOf(fc.option(fc.string({ maxLength: 10 }), { nil: null }), 20)
  holds(
    t,
    'patch rules',
    fc.property(currentArb, patchArb, fc.boolean(), (current, patch, deleteEmpty) => {
      const expected = new Map(current.entries)
      for (const [k, v] of patch.entries) {
        if (v === null || (deleteEmpty && v === '')) expected.delete(k)
        else expected.set(k, v)
      }
      let out: Record<string, string>
      try {
        out = patchMetadata(current.obj, patch.obj, deleteEmpty)
      } catch (e) {
        return isBadRequest(e) && expected.size > MAX_METADATA_KEYS
      }
      if (expected.size > MAX_METADATA_KEYS) return false
      const got = Object.entries(out)
      return got.length === expected.size && got.every(([k, v]) => expected.get(k) === v) && [...expected.keys()].every((k) => Object.hasOwn(out, k))
    }),
    { numRuns: 500 },
  )
})

t.test('patchMetadata does not modify its inputs', async (t) => {
  holds(
    t,
    'inputs untouched',
    fc.property(entriesOf(fc.string(), 16), entriesOf(fc.option(fc.string(), { nil: null }), 16), (current, patch) => {
      const before = JSON.stringify([current.obj, patch.obj])
      try {
        patchMetadata(current.obj, patch.obj)
      } catch {}
      return JSON.stringify([current.obj, patch.obj]) === before
    }),
  )
})
