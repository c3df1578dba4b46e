import t from 'tap'
import { ApiError } from '../../protocol/errors/api-error.js'
import { acked, beat, handOut, lapse, newItem, type Queue, RETAIN_STOPPED, replace, stop, successors, takeable, ttlOf } from '../../actors/work/state.js'
import { signSessionsToken, tokenReaches, verifySessionsToken } from '../../protocol/sessions-token.js'

/** The work queue's transitions (actors/work/state.ts) and the sessions token (protocol/sessions-token.ts), as functions. */

const T0 = Date.parse('2026-01-01T00:00:00.000Z')
const code = (fn: () => unknown) => {
  try {
    fn()
  } catch (err) {
    return err instanceof ApiError ? err.code : String(err)
  }
  return 'no error'
}

t.test('an ack no beat follows lapses: the item is queued again with its claim marks reset', async (t) => {
  const it = acked(handOut(newItem('work_1', 'sesn_1', T0), T0), T0)
  t.equal(it.state, 'starting')
  const q: Queue = { items: [{ ...it, metadata: { k: 'v' } }] }
  t.equal(lapse(q, T0 + 29_999), q, 'not before its 30 s')
  const [back] = lapse(q, T0 + 30_000).items
  t.match(back, { state: 'queued', acknowledged_at: null, last_heartbeat: null, lease_until: null, handed_at: null, claim: 1, metadata: { k: 'v' } })
})

t.test('heartbeat: claim, compare, unique values, stale claims, stopping and stopped', async (t) => {
  let it = acked(handOut(newItem('work_1', 'sesn_1', T0), T0), T0)
  t.equal(
    code(() => beat(it, T0, 'x', undefined, undefined)),
    'heartbeat_precondition_failed',
  )
  t.equal(
    code(() => beat(it, T0, 'NO_HEARTBEAT', undefined, 0)),
    'heartbeat_precondition_failed',
    'a token of an earlier claim',
  )
  const first = beat(it, T0, undefined, undefined, 1)
  t.match(first, { extended: true, item: { state: 'active', ttl_seconds: 60 } })
  const second = beat(first.item, T0, first.item.last_heartbeat!, 1, undefined)
  t.ok(second.item.last_heartbeat! > first.item.last_heartbeat!, 'a beat in the same millisecond stores a later value')
  t.equal(second.item.ttl_seconds, 2)
  t.equal(
    code(() => beat(second.item, T0, first.item.last_heartbeat!, undefined, undefined)),
    'heartbeat_precondition_failed',
  )
  it = stop(second.item, T0, false)
  t.match(beat(it, T0, 'anything', 10, 0), { extended: true, item: { state: 'stopping', ttl_seconds: 10 } }, 'not compared once stopping')
  it = stop(it, T0, true)
  t.match(beat(it, T0, 'anything', 10, 0), { extended: false, item: { state: 'stopped' } })
  t.equal(
    code(() => stop(it, T0, true)),
    'work_stopped',
  )
  t.same([ttlOf(undefined), ttlOf(0), ttlOf(-5), ttlOf(601), ttlOf(30)], [60, 2, 2, 600, 30])
})

t.test('poll order, reclaim, retention and successors', async (t) => {
  const a = newItem('work_a', 'sesn_a', T0)
  const b = newItem('work_b', 'sesn_b', T0 + 1)
  let q: Queue = { items: [a, b] }
  t.equal(takeable(q, T0, 5000)?.id, 'work_a', 'oldest first')
  q = replace(q, handOut(a, T0))
  t.equal(takeable(q, T0 + 10, 5000)?.id, 'work_b', 'a pending item is skipped')
  t.equal(takeable(q, T0 + 10, 0)?.id, 'work_a', 'unless older than the reclaim age')
  const stopping = { ...stop(acked(q.items[0]!, T0), T0, false), again: true }
  q = replace(q, stopping)
  const next = successors(replace(q, stop(stopping, T0, true)), T0, () => 'work_c')
  t.ok(next.queued)
  t.match(next.q.items.at(-1), { id: 'work_c', session_id: 'sesn_a', state: 'queued' })
  let many: Queue = { items: [] }
  for (let i = 0; i < RETAIN_STOPPED + 5; i++) many = { items: [...many.items, stop(newItem(`work_${i}`, 's', T0 + i), T0, false)] }
  many = replace(many, many.items[0]!)
  t.equal(many.items.length, RETAIN_STOPPED, 'stopped items beyond the retention go, oldest first')
  t.equal(many.items[0]!.id, 'work_5')
})

t.test('sessions token: signed claims, forged, truncated, expired, scope', async (t) => {
  const key = new Uint8Array(32).fill(7)
  const claims = { e: 'env_1', w: 'work_1', s: 'sesn_1', n: 2, x: 2_000_000_000 }
  const tok = signSessionsToken(key, claims)
  t.same(verifySessionsToken(key, tok, 1_000), claims)
  t.equal(verifySessionsToken(key, tok, 2_000_000_000), 'expired')
  t.equal(verifySessionsToken(new Uint8Array(32).fill(8), tok), 'forged', 'another key')
  t.equal(verifySessionsToken(key, tok.slice(0, -1)), 'forged', 'truncated')
  t.equal(verifySessionsToken(key, `${tok}.x`), 'forged')
  t.equal(verifySessionsToken(key, 'trst1.'), 'forged')
  t.equal(verifySessionsToken(key, `trst1.${'a'.repeat(2000)}.b`), 'forged', 'too long')
  const [body] = tok.slice(6).split('.')
  const other = Buffer.from(JSON.stringify({ ...claims, s: 'sesn_2' })).toString('base64url')
  t.equal(verifySessionsToken(key, tok.replace(body!, other)), 'forged', 'claims changed under the signature')
  t.ok(tokenReaches(claims, 'sessions.events.stream', { session_id: 'sesn_1' }))
  t.notOk(tokenReaches(claims, 'sessions.events.stream', { session_id: 'sesn_2' }))
  t.ok(tokenReaches(claims, 'environments.work.heartbeat', { environment_id: 'env_1', work_id: 'work_1' }))
  t.notOk(tokenReaches(claims, 'environments.work.heartbeat', { environment_id: 'env_1', work_id: 'work_2' }))
  t.notOk(tokenReaches(claims, 'environments.work.poll', { environment_id: 'env_1' }))
  t.notOk(tokenReaches(claims, 'sessions.delete', { session_id: 'sesn_1' }))
})
