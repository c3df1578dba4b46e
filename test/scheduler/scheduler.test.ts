import t, { type Test } from 'tap'
import pino from 'pino'
import { connect } from '@nats-io/transport-node'
import { jetstream, jetstreamManager } from '@nats-io/jetstream'
import { Kvm, type KV } from '@nats-io/kv'
import { TimeoutError } from '@nats-io/nats-core'
import { parseClock } from '../../protocol/clock.js'
import { decode, encode } from '../../protocol/codec.js'
import { nextOccurrence } from '../../protocol/schedule.js'
import { Buckets } from '../../protocol/subjects.js'
import { startScheduler } from '../../actors/deployment/scheduler/index.js'
import { CATCH_UP_MS } from '../../actors/deployment/scheduler/occurrences.js'
import { actorWire } from '../../actors/kit/wire.js'
import { openBucket } from '../../actors/kit/buckets.js'
import { isCasConflict } from '../../actors/kit/nats-errors.js'
import { DEPLOYMENT_PREFIX, type DeploymentState } from '../../actors/deployment/state.js'
import { startNats } from '../helpers/nats.js'
import { until } from '../helpers/wait.js'
import { deploymentState, fireOwner } from './fire-owner.js'

// The scheduler in this process on a real nats-server: its index is fed by deployment records the test writes, its
// fires go over the actor wire to a stand-in of the deployment's `fire` (./fire-owner.ts).

const MIN = 60_000
const nats = await startNats()
t.teardown(() => nats.stopNow())
const nc = await connect({ servers: nats.url })
t.teardown(() => nc.close())
const kvm = new Kvm(jetstream(nc))
const log = pino({ level: process.env.TROUPE_TEST_LOG ?? 'silent' }, pino.destination(2))
const storage = { jsm: await jetstreamManager(nc), replicas: 1, log }
const kv = await openBucket(kvm, storage, Buckets.deployments)
// A minute every real second: the catch-up window (5 minutes) is then 5 real seconds, longer than any stall of this
// process on a loaded two-core machine. At 120× a 2.5 s stall skips an occurrence, as designed, which failed the
// "none skipped" checks below.
const clock = parseClock('start=2026-03-01T00:00:00Z,rate=60')
const owner = fireOwner(nc, kv)
t.teardown(() => owner.stop())

const schedulers = await Promise.all([0, 1, 2].map(() => startScheduler({ kvm, storage, wire: actorWire(nc), clock, log })))
t.teardown(() => Promise.all(schedulers.map((s) => s.stop())))

const put = (id: string, s: DeploymentState) => kv.put(`${DEPLOYMENT_PREFIX}${id}`, encode(s))
/** Changes a record as its owner would, at the revision read (the stand-in writes last_scheduled_at beside us). */
async function edit(id: string, change: (s: DeploymentState) => void) {
  for (;;) {
    const e = (await kv.get(`${DEPLOYMENT_PREFIX}${id}`))!
    const s = decode<DeploymentState>(e.value)
    change(s)
    try {
      await kv.update(e.key, encode(s), e.revision)
      return
    } catch (err) {
      if (!isCasConflict(err)) throw err
    }
  }
}

/** Occurrences of an every-minute schedule fired in a row, none twice, none skipped. */
function consecutive(t: Test, list: number[], what: string) {
  const gaps = list.slice(1).filter((at, i) => at !== list[i]! + MIN)
  t.same(gaps, [], `${what}: ${list.length} occurrences, one minute apart, none twice`)
}

t.test('only deployments with a schedule that are neither paused nor archived fire, each occurrence once, in order', async (t) => {
  await put('depl_on', deploymentState('depl_on', { expression: '* * * * *' }))
  await put('depl_paused', deploymentState('depl_paused', { expression: '* * * * *', paused: true }))
  await put('depl_archived', deploymentState('depl_archived', { expression: '* * * * *', archived: true }))
  await put('depl_none', deploymentState('depl_none', {}))
  await until('five occurrences', () => (owner.queued.get('depl_on')?.length ?? 0) >= 5, 20_000)
  consecutive(t, owner.queued.get('depl_on')!, 'depl_on')
  t.notOk(owner.queued.has('depl_paused'))
  t.notOk(owner.queued.has('depl_archived'))
  t.notOk(owner.queued.has('depl_none'))
  t.ok(
    schedulers.every((s) => s.scheduler.counts.deployments === 1),
    'every scheduler knows the one that fires',
  )
})

t.test('pause stops firing; unpause resumes at the next occurrence, no backfill; a schedule change is followed', async (t) => {
  await put('depl_p', deploymentState('depl_p', { expression: '* * * * *' }))
  await until('fired', () => (owner.queued.get('depl_p')?.length ?? 0) >= 2, 20_000)
  await edit('depl_p', (s) => {
    s.deployment.paused_reason = { type: 'manual' }
  })
  await until('every scheduler dropped it', () => schedulers.every((s) => s.scheduler.counts.deployments === 1), 5000)
  const before = owner.queued.get('depl_p')!.length
  // Three minutes of the clock pass paused.
  const pausedAt = clock()
  await until('three minutes', () => clock() > pausedAt + 3 * MIN, 10_000)
  // A fire in flight when the pause was written may still land once.
  t.ok(owner.queued.get('depl_p')!.length <= before + 1, 'nothing fires while paused')
  const resumedAt = clock()
  await edit('depl_p', (s) => {
    s.deployment.paused_reason = null
    s.fires_from = new Date(resumedAt).toISOString()
  })
  await until('fired again', () => owner.queued.get('depl_p')!.at(-1)! >= resumedAt, 10_000)
  const after = owner.queued.get('depl_p')!.filter((at) => at >= pausedAt)
  t.equal(
    after.find((at) => at >= resumedAt),
    nextOccurrence({ type: 'cron', expression: '* * * * *', timezone: 'UTC' }, resumedAt - 1),
    'the next occurrence after unpause',
  )
  t.notOk(
    after.some((at) => at > pausedAt + MIN && at < resumedAt),
    'no backfill of the paused minutes',
  )
  const changedAt = clock()
  await edit('depl_p', (s) => {
    s.deployment.schedule = { type: 'cron', expression: '*/2 * * * *', timezone: 'UTC', last_run_at: null } as never
    s.fires_from = new Date(changedAt).toISOString()
  })
  await until('two on the new schedule', () => owner.queued.get('depl_p')!.filter((at) => at > changedAt + MIN).length >= 2, 20_000)
  t.ok(
    owner.queued
      .get('depl_p')!
      .filter((at) => at > changedAt + MIN)
      .every((at) => at % (2 * MIN) === 0),
    'even minutes only',
  )
})

t.test('occurrences missed while nobody fired: those of the catch-up window, oldest first; none older', async (t) => {
  const state = deploymentState('depl_late', { expression: '* * * * *' })
  state.last_scheduled_at = new Date(clock() - 60 * MIN).toISOString()
  const now = clock()
  await put('depl_late', state)
  await until('caught up', () => owner.queued.get('depl_late')?.some((at) => at > now), 20_000)
  const list = owner.queued.get('depl_late')!
  t.ok(list[0]! >= now - CATCH_UP_MS, 'nothing older than the window')
  t.ok(list[0]! <= now - CATCH_UP_MS + MIN, 'the window fired from its oldest occurrence')
  consecutive(t, list, 'depl_late')
})

t.test('the schedulers agree on who prefers each occurrence, and share them out', async (t) => {
  await until('all heard', () => schedulers.every((s) => (s.scheduler as any).o.preferred('x') === (schedulers[0]!.scheduler as any).o.preferred('x')), 5000)
  const counts = new Map<string, number>()
  let disagree = 0
  for (let i = 0; i < 3000; i++) {
    const names = new Set(schedulers.map((s) => (s.scheduler as any).o.preferred(`claim.depl_${i}.0`)))
    if (names.size > 1) disagree++
    const name = [...names][0]!
    counts.set(name, (counts.get(name) ?? 0) + 1)
  }
  t.equal(disagree, 0, 'every scheduler names the same one')
  t.equal(counts.size, 3)
  t.ok(
    [...counts.values()].every((n) => n > 800),
    `about a third each: ${[...counts.values()].join(', ')}`,
  )
})

t.test('start-up goes on through JetStream calls that time out (a node cut off, a leader being elected)', async (t) => {
  // Each bucket's first status and first watch time out, as they do while its stream has no leader. (Opening a bucket
  // reads its stream's info, waiting for a leader, through the manager: kit/replicas.ts untilLed; no status call.)
  const timedOut: string[] = []
  const flaky = (kv: KV, name: string): KV =>
    new Proxy(kv, {
      get(target, prop) {
        const v = Reflect.get(target, prop)
        if (typeof v !== 'function') return v
        const call = `${name} ${String(prop)}`
        if ((prop === 'status' || prop === 'watch') && !timedOut.includes(call)) {
          return () => {
            timedOut.push(call)
            return Promise.reject(new TimeoutError())
          }
        }
        return v.bind(target)
      },
    })
  const flakyKvm = new Proxy(kvm, {
    get: (target, prop) => (prop === 'create' ? async (name: string, opts: any) => flaky(await target.create(name, opts), name) : Reflect.get(target, prop)),
  })
  const s = await startScheduler({ kvm: flakyKvm, storage, wire: actorWire(nc), clock, log })
  await s.stop()
  t.same(timedOut.sort(), [`${Buckets.deployments} watch`, `${Buckets.orchestrators} watch`, `${Buckets.scheduleClaims} watch`])
})
