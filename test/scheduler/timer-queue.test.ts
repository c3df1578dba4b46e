import t from 'tap'
import { parseClock } from '../../protocol/clock.js'
import { CATCH_UP_MS, nextToFire } from '../../actors/deployment/scheduler/occurrences.js'
import { parseClaimKey, claimKey } from '../../actors/deployment/scheduler/claims.js'
import { TimerQueue } from '../../actors/deployment/scheduler/timer-queue.js'
import type { Scheduled } from '../../actors/deployment/scheduler/schedules.js'
import { until } from '../helpers/wait.js'

const MIN = 60_000

t.test('the timer queue hands keys over in the order of their instants, a key set again only at its last', async (t) => {
  // 600 clock ms per real one: a minute passes in 100 real ms.
  const clock = parseClock(`start=2026-03-01T00:00:00Z,rate=600`)
  const got: Array<[string, number]> = []
  const q = new TimerQueue(clock, (key, at) => got.push([key, at]))
  t.teardown(() => q.stop())
  const now = clock()
  q.set('c', now + 3 * MIN)
  q.set('a', now + MIN)
  q.set('b', now + 2 * MIN)
  q.set('d', now + 30 * MIN)
  q.set('a', now + 4 * MIN) // supersedes a at +1
  q.delete('d')
  t.equal(q.size, 3)
  await until('three keys due', () => got.length === 3, 5000)
  t.same(
    got.map(([k]) => k),
    ['b', 'c', 'a'],
  )
  t.ok(
    got.every(([, at]) => at <= clock()),
    'none early',
  )
  t.equal(q.size, 0)
})

t.test('a key set for an instant already past is due at once; setting keys inside the callback works', async (t) => {
  const clock = parseClock('start=2026-03-01T00:00:00Z')
  const got: string[] = []
  const q = new TimerQueue(clock, (key, at) => {
    got.push(key)
    if (key === 'x') q.set('y', at - 1)
  })
  t.teardown(() => q.stop())
  q.set('x', clock() - 10)
  await until('x then y', () => got.length === 2, 2000)
  t.same(got, ['x', 'y'])
})

t.test('10,000 keys at one instant come out in one pass', async (t) => {
  const clock = parseClock('start=2026-03-01T00:00:00Z,rate=600')
  let n = 0
  const q = new TimerQueue(clock, () => n++)
  t.teardown(() => q.stop())
  const at = clock() + MIN
  for (let i = 0; i < 10_000; i++) q.set(`k${i}`, at)
  await until('all due', () => n === 10_000, 5000)
  t.equal(q.size, 0)
})

const every = (expression: string, more: Partial<Scheduled> = {}): Scheduled => ({
  schedule: { type: 'cron', expression, timezone: 'UTC' },
  firesFrom: Number.NEGATIVE_INFINITY,
  lastScheduled: Number.NEGATIVE_INFINITY,
  ...more,
})

t.test('the next occurrence: oldest unfired first, within the catch-up window, never before fires_from', async (t) => {
  const now = Date.parse('2026-03-01T12:00:30Z')
  const minutely = every('* * * * *')
  t.equal(nextToFire(minutely, Number.NEGATIVE_INFINITY, now), now - 30_000 - CATCH_UP_MS + MIN, 'the oldest occurrence of the window')
  t.equal(nextToFire(every('* * * * *', { lastScheduled: now - 90_000 }), Number.NEGATIVE_INFINITY, now), now - 30_000, 'after the last that made a run')
  t.equal(nextToFire(every('* * * * *', { firesFrom: now - 30_000 }), Number.NEGATIVE_INFINITY, now), now - 30_000, 'fires_from itself fires')
  t.equal(nextToFire(every('* * * * *', { firesFrom: now }), Number.NEGATIVE_INFINITY, now), now + 30_000, 'nothing before fires_from (unpause: no backfill)')
  t.equal(nextToFire(minutely, now - 30_000, now), now + 30_000, 'after the one just fired')
  t.equal(nextToFire(every('0 0 * * *'), Number.NEGATIVE_INFINITY, now), Date.parse('2026-03-02T00:00:00Z'), 'a daily one missed hours ago is not caught up')
  t.equal(nextToFire(every('0 0 31 2 *', {}), Number.NEGATIVE_INFINITY, now), undefined, 'an expression cron-parser refuses never fires')
})

t.test('claim keys name the deployment and the occurrence', async (t) => {
  t.same(parseClaimKey(claimKey('depl_01ABC', 1_772_366_400_000)), { id: 'depl_01ABC', at: 1_772_366_400_000 })
  t.equal(parseClaimKey('claim.depl_x.nope'), undefined)
  t.equal(parseClaimKey('orch.x'), undefined)
})
