import t, { type Test } from 'tap'
import { decodeCursor, encodeCursor, isRecordPosition, isSeq } from '../../protocol/cursor.js'
import { refusal } from './_refusal.js'

/**
 * Page cursors (protocol/cursor.ts), by example: the property tests in test/protocol/properties.test.ts cover
 * random inputs; these pin the exact answers, the boundaries and the binding to resource and filters.
 */

const NOT_A_CURSOR = 'page must be a cursor returned by this endpoint (was not a valid cursor)'
const OTHER_FILTERS = 'page was issued for different filters; repeat the original query with it'

const b64 = (s: string) => Buffer.from(s).toString('base64url')
const json = (page: string) => JSON.parse(Buffer.from(page, 'base64url').toString('utf8'))
const anything = (_a: unknown): _a is unknown => true

function notACursor(t: Test, fn: () => unknown, what: string) {
  const e = refusal(fn)
  t.match(e, { status: 400, type: 'invalid_request_error', message: NOT_A_CURSOR }, what)
  t.equal(e?.code, undefined, `${what}: no error code`)
}

function otherFilters(t: Test, fn: () => unknown, what: string) {
  const e = refusal(fn)
  t.match(e, { status: 400, type: 'invalid_request_error', message: OTHER_FILTERS, code: 'cursor_filter_mismatch' }, what)
}

t.test('round trips: sequences and record positions come back as they went', async (t) => {
  for (const seq of [0, 1, 2 ** 31, 2 ** 32 + 1, Number.MAX_SAFE_INTEGER]) {
    const page = encodeCursor('agent_versions', { agent_id: 'agent_1' }, seq)
    t.equal(decodeCursor('agent_versions', { agent_id: 'agent_1' }, page, isSeq), seq, `seq ${seq}`)
  }
  const positions = [
    { id: 'sesn_1', created_at: '2026-01-01T00:00:00.000Z' },
    { id: 'sesn_1', created_at: '2026-01-01T00:00:00.000Z', dir: 'prev' },
    { id: '', created_at: '' },
    { id: 'x'.repeat(256), created_at: 'y'.repeat(64) },
    { id: 'é"\\\n\u0000<>&?', created_at: '☃' },
  ]
  for (const pos of positions) {
    const page = encodeCursor('sessions', { order: 'desc' }, pos)
    t.same(decodeCursor('sessions', { order: 'desc' }, page, isRecordPosition), pos, `position ${JSON.stringify(pos).slice(0, 40)}`)
  }
})

t.test('a cursor is URL-safe base64 of {f, a}', async (t) => {
  const page = encodeCursor('sessions', { order: 'asc' }, { id: '???>>>~~~', created_at: 'ÿÿÿ' })
  t.match(page, /^[A-Za-z0-9_-]+$/, 'no +, / or = padding')
  const body = json(page)
  t.same(Object.keys(body), ['f', 'a'])
  t.match(body.f, /^[0-9a-z]+$/, 'the fingerprint is a base-36 number')
  t.same(body.a, { id: '???>>>~~~', created_at: 'ÿÿÿ' })
  t.equal(encodeCursor('sessions', { order: 'asc' }, 5), encodeCursor('sessions', { order: 'asc' }, 5), 'deterministic')
})

t.test('absent or empty page: the first page, whatever the filters', async (t) => {
  t.equal(decodeCursor('r', { a: 1 }, undefined, isSeq), undefined)
  t.equal(decodeCursor('r', { a: 1 }, '', isSeq), undefined)
})

t.test('garbage is refused with the clear message and nothing else', async (t) => {
  const pages: Array<[string, string]> = [
    ['not-a-cursor', 'random base64url'],
    ['!!!!', 'no base64 characters at all (decodes to nothing)'],
    ['%7B%7D', 'percent-encoded'],
    [' ', 'a space'],
    ['null', 'the word null (not base64 of it)'],
    [b64('null'), 'JSON null'],
    [b64('0'), 'a number'],
    [b64('"text"'), 'a string'],
    [b64('true'), 'a boolean'],
    [b64('[]'), 'an array'],
    [b64('[1,2]'), 'an array with items'],
    [b64('{}'), 'an empty object'],
    [b64('{"a":1}'), 'no fingerprint'],
    [b64('{"f":1,"a":1}'), 'a fingerprint that is not a string'],
    [b64('{"f":null,"a":1}'), 'a null fingerprint'],
    [b64('{"f":"x"}'), 'no position'],
    [b64('{"f":"x","a":1'), 'truncated JSON'],
    [b64('{"f":"x","a":1}garbage'), 'trailing bytes'],
    [b64('\u00ff\u00fe'), 'bytes that are not JSON'],
    [Buffer.from([0xff, 0xfe, 0x00]).toString('base64url'), 'invalid UTF-8'],
    [b64('{"f":"x","a":1}').slice(0, -3), 'a valid cursor cut short'],
  ]
  for (const [page, what] of pages) notACursor(t, () => decodeCursor('r', {}, page, anything), what)
})

t.test('a well-formed cursor of another resource or filters: cursor_filter_mismatch', async (t) => {
  const filters = { agent_id: 'agent_1', limit: 10, include_archived: false, types: ['user.message', 'agent.message'] }
  const page = encodeCursor('sessions', filters, 7)
  t.equal(decodeCursor('sessions', filters, page, isSeq), 7, 'the same query: accepted')
  t.equal(
    decodeCursor('sessions', { types: filters.types, include_archived: false, limit: 10, agent_id: 'agent_1' }, page, isSeq),
    7,
    'key order does not matter',
  )
  t.equal(decodeCursor('sessions', { ...filters, order: undefined }, page, isSeq), 7, 'an undefined filter is an absent one')
  otherFilters(t, () => decodeCursor('agents', filters, page, isSeq), 'another resource')
  otherFilters(t, () => decodeCursor('sessions', { ...filters, agent_id: 'agent_2' }, page, isSeq), 'another value')
  otherFilters(t, () => decodeCursor('sessions', { ...filters, limit: '10' }, page, isSeq), 'a number is not its string')
  otherFilters(t, () => decodeCursor('sessions', { ...filters, include_archived: null }, page, isSeq), 'null is not absent')
  otherFilters(t, () => decodeCursor('sessions', { ...filters, order: 'asc' }, page, isSeq), 'an added filter')
  otherFilters(t, () => decodeCursor('sessions', { agent_id: 'agent_1' }, page, isSeq), 'filters left out')
  otherFilters(t, () => decodeCursor('sessions', { ...filters, types: [...filters.types].reverse() }, page, isSeq), 'list order counts')
  otherFilters(t, () => decodeCursor('sessions', {}, page, isSeq), 'no filters at all')
  // Per-session resources: a cursor of one session's events is not another's.
  const ev = encodeCursor('session_events:sesn_A', { order: 'asc' }, 3)
  otherFilters(t, () => decodeCursor('session_events:sesn_B', { order: 'asc' }, ev, isSeq), 'another session')
  // The fingerprint is checked before the position: a garbage position under a foreign fingerprint says "filters".
  otherFilters(t, () => decodeCursor('r', {}, b64('{"f":"zzz","a":"whatever"}'), isSeq), 'a made-up fingerprint')
})

t.test('tampering: the fingerprint is a checksum, so positions are checked for shape', async (t) => {
  const page = encodeCursor('agent_versions', { agent_id: 'agent_1' }, 4)
  const { f } = json(page)
  const forge = (a: unknown) => b64(JSON.stringify({ f, a }))
  // A forged position of the right shape is accepted: that is what isSeq/isRecordPosition are for.
  t.equal(decodeCursor('agent_versions', { agent_id: 'agent_1' }, forge(99), isSeq), 99)
  for (const [a, what] of [
    [-1, 'negative'],
    [1.5, 'fractional'],
    [Number.MAX_SAFE_INTEGER + 1, 'past MAX_SAFE_INTEGER'],
    [1e308, 'huge'],
    ['4', 'a numeric string'],
    [null, 'null'],
    [true, 'a boolean'],
    [[4], 'an array'],
    [{ seq: 4 }, 'an object'],
  ] as Array<[unknown, string]>) {
    notACursor(t, () => decodeCursor('agent_versions', { agent_id: 'agent_1' }, forge(a), isSeq), `seq ${what}`)
  }
  // A changed fingerprint is another query's cursor.
  const bumped = b64(JSON.stringify({ f: `${f}0`, a: 4 }))
  otherFilters(t, () => decodeCursor('agent_versions', { agent_id: 'agent_1' }, bumped, isSeq), 'fingerprint changed')
  // Extra keys ride along unread.
  t.equal(decodeCursor('agent_versions', { agent_id: 'agent_1' }, b64(JSON.stringify({ f, a: 4, x: 'y' })), isSeq), 4)
})

t.test('record positions: the bounds of id and created_at', async (t) => {
  const filters = { order: 'desc' }
  const f = json(encodeCursor('agents', filters, 0)).f
  const forge = (a: unknown) => b64(JSON.stringify({ f, a }))
  t.same(decodeCursor('agents', filters, forge({ id: 'i'.repeat(256), created_at: 'c'.repeat(64) }), isRecordPosition), {
    id: 'i'.repeat(256),
    created_at: 'c'.repeat(64),
  })
  for (const [a, what] of [
    [{ id: 'i'.repeat(257), created_at: 'c' }, 'id of 257 characters'],
    [{ id: 'i', created_at: 'c'.repeat(65) }, 'created_at of 65 characters'],
    [{ id: 1, created_at: 'c' }, 'numeric id'],
    [{ id: 'i', created_at: 1 }, 'numeric created_at'],
    [{ id: 'i' }, 'no created_at'],
    [{ created_at: 'c' }, 'no id'],
    [{ id: null, created_at: 'c' }, 'null id'],
    [['i', 'c'], 'an array'],
    [Object.assign([], { id: 'i', created_at: 'c' }), 'an array with the keys (JSON drops them)'],
    ['i', 'a string'],
    [7, 'a sequence'],
    [null, 'null'],
  ] as Array<[unknown, string]>) {
    notACursor(t, () => decodeCursor('agents', filters, forge(a), isRecordPosition), what)
  }
})

t.test('the validators on their own', async (t) => {
  for (const ok of [0, 1, Number.MAX_SAFE_INTEGER]) t.ok(isSeq(ok), `isSeq(${ok})`)
  for (const bad of [-1, -0.5, 0.5, Number.MAX_SAFE_INTEGER + 1, NaN, Infinity, -Infinity, '1', null, undefined, {}, [1], 1n]) {
    t.notOk(isSeq(bad), `isSeq(${typeof bad === 'bigint' ? '1n' : (JSON.stringify(bad) ?? String(bad))})`)
  }
  t.ok(isSeq(-0), '-0 is a safe integer ≥ 0')
  t.ok(isRecordPosition({ id: '', created_at: '' }))
  t.ok(isRecordPosition({ id: 'x', created_at: 'y', extra: 1 }))
  t.notOk(isRecordPosition([]))
  t.notOk(isRecordPosition(null))
  t.notOk(isRecordPosition(undefined))
  t.notOk(isRecordPosition(Object.assign(['x'], { id: 'i', created_at: 'c' })), 'an array, even with the keys')
})

t.test('decoding is lenient about the base64 alphabet and padding', async (t) => {
  const pos = { id: 'a?>b', created_at: 'c~' }
  const page = encodeCursor('r', {}, pos)
  const standard = Buffer.from(Buffer.from(page, 'base64url')).toString('base64')
  t.not(standard, page, 'the standard alphabet spells this one differently')
  t.same(decodeCursor('r', {}, standard, isRecordPosition), pos, 'standard base64 with padding decodes the same')
})
