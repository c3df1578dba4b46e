import t, { type Test } from 'tap'
import type Anthropic from '@anthropic-ai/sdk'
import { connect } from '@nats-io/transport-node'
import { jetstream } from '@nats-io/jetstream'
import { Kvm } from '@nats-io/kv'
import { parseClock } from '../../protocol/clock.js'
import { decode } from '../../protocol/codec.js'
import { Buckets } from '../../protocol/subjects.js'
import { type ClaimValue, parseClaimKey } from '../../actors/deployment/scheduler/claims.js'
import { startTroupe, type TroupeProcess } from '../helpers/troupe.js'
import { until } from '../helpers/wait.js'
import { deploy, deploymentStack } from '../deployments/_helpers.js'

// Real processes end to end: `troupe serve` owns the deployments, three `troupe orchestrate` fire them, all on one
// test clock where a minute passes every 3 real seconds. One orchestrator is SIGKILLed as soon as it is seen holding
// a claim: its share is taken over by the other two when its leases end, and every occurrence still makes exactly
// one run (the deployment's own last_scheduled_at makes a fire repeated after a takeover a duplicate).

const MIN = 60_000
const RATE = 20
const since = Date.now()
const CLOCK = `start=2026-03-01T00:00:30Z,rate=${RATE},since=${since}`
const clock = parseClock(CLOCK)
const env = { TROUPE_SCHEDULE_CLOCK: CLOCK }

const s = await deploymentStack(env)
const orchestrate = () => startTroupe({ role: 'orchestrate', natsUrl: s.nats.url, env })
/** The id an orchestrator's start-up block names (printed right after its ready line). */
const schedulerId = (p: TroupeProcess) => until('the start-up block', () => /scheduler (orch_\w+)/.exec(p.stdout())?.[1], 5000)

/** The scheduled_at of every scheduled run of a deployment, in order, and whether each has its session. */
async function scheduledRuns(client: Anthropic, deploymentId: string) {
  const runs: any[] = []
  for await (const r of client.beta.deploymentRuns.list({ deployment_id: deploymentId, trigger_type: 'schedule', limit: 100 } as any)) runs.push(r)
  const at = runs.map((r) => Date.parse(r.trigger_context.scheduled_at)).sort((a, b) => a - b)
  return { at, withSession: runs.filter((r) => r.session_id !== null && r.error === null).length, count: runs.length }
}

/** Every minute from the first to the last, once each. */
const gapless = (at: number[]) => at.every((v, i) => i === 0 || v === at[i - 1]! + MIN)

t.test('three orchestrators, one SIGKILLed while it holds claims: exactly one run per occurrence, none lost', async (t: Test) => {
  const procs = await Promise.all([orchestrate(), orchestrate(), orchestrate()])
  t.teardown(() => {
    for (const p of procs) p.killNow()
  })
  const ids = await Promise.all(procs.map(schedulerId))
  const created = await Promise.all(
    Array.from({ length: 24 }, () => deploy(s.client, { schedule: { type: 'cron', expression: '* * * * *', timezone: 'UTC' } })),
  )
  const deployments = created.map((c) => c.deployment)
  // Each deployment's own first occurrence, as its create answered it: 24 creates at once can straddle a minute of
  // the test clock (3 real seconds) on a loaded machine.
  const firstDue = deployments.map((d) => Date.parse((d as any).schedule.upcoming_runs_at[0]))

  await until(
    'two occurrences fired',
    async () => (await Promise.all(deployments.slice(0, 3).map((d) => scheduledRuns(s.client, d.id)))).every((r) => r.count >= 2),
    30_000,
    250,
  )
  // Claims in flight, for certain: the deployments' owner is paused (SIGSTOP) just before the next occurrence, so every
  // fire of it waits; the first orchestrator seen holding a claim is SIGKILLed; the owner then resumes (well within
  // its heartbeat's TTL) and answers the survivors. The dead one's claims stay held until their leases end.
  const nc = await connect({ servers: s.nats.url })
  t.teardown(() => nc.close())
  const claims = await new Kvm(jetstream(nc)).open(Buckets.scheduleClaims)
  const watch = await claims.watch({ key: 'claim.>', include: 'updates' })
  const next = Math.ceil(clock() / MIN) * MIN
  await until('just before the next occurrence', () => clock() >= next - 200 * RATE, 10_000, 5)
  s.troupe.signal('SIGSTOP')
  let victim: TroupeProcess | undefined
  const heldAtKill: string[] = []
  try {
    for await (const e of watch) {
      const v = decode<ClaimValue>(e.value)
      const holder = 'holder' in v ? v.holder : undefined
      victim = holder === undefined ? undefined : procs[ids.indexOf(holder)]
      if (!victim) continue
      await victim.kill()
      for await (const k of await claims.keys('claim.>')) {
        const c = await claims.get(k)
        const cv = c?.operation === 'PUT' ? decode<ClaimValue>(c.value) : undefined
        if (cv && 'holder' in cv && cv.holder === holder) heldAtKill.push(k)
      }
      break
    }
  } finally {
    s.troupe.signal('SIGCONT')
    watch.stop()
  }
  const killedAt = clock()
  t.ok(heldAtKill.length > 0, `killed ${ids[procs.indexOf(victim!)]} holding ${heldAtKill.length} claims`)

  // Four more minutes of the clock (12 s): the leases (5 s) end, the survivors take over and catch up.
  const target = Math.floor(killedAt / MIN) * MIN + 4 * MIN
  const survivors = procs.filter((p) => p !== victim)
  await until(
    'runs past the takeover',
    async () => (await Promise.all(deployments.map((d) => scheduledRuns(s.client, d.id)))).every((r) => r.at.at(-1)! >= target),
    60_000,
    500,
  )
  await Promise.all(survivors.map((p) => p.stop()))
  // Fires queued before the stop are recorded by the deployments' owner: wait for every list to close its gaps.
  const final = await until(
    'every run recorded',
    async () => {
      const all = await Promise.all(deployments.map((d) => scheduledRuns(s.client, d.id)))
      return all.every((r) => gapless(r.at) && r.withSession === r.count) && all
    },
    30_000,
    500,
  ).catch(async () => Promise.all(deployments.map((d) => scheduledRuns(s.client, d.id))))
  for (const [i, r] of final.entries()) {
    t.equal(new Set(r.at).size, r.at.length, `${deployments[i]!.id}: no occurrence twice`)
    t.ok(gapless(r.at), `${deployments[i]!.id}: no occurrence missing between ${new Date(r.at[0]!).toISOString()} and ${new Date(r.at.at(-1)!).toISOString()}`)
    t.equal(r.at[0], firstDue[i], 'from the first occurrence after it was created')
    t.ok(r.at.at(-1)! >= target, 'through the takeover')
    t.equal(r.withSession, r.count, 'each run has its session')
  }
  for (const k of heldAtKill) {
    const { id, at } = parseClaimKey(k)!
    t.ok(final[deployments.findIndex((d) => d.id === id)]!.at.includes(at), `${k}, held by the dead one, made its run`)
  }
})

t.test('serve alone never fires; an orchestrator joining fires', async (t: Test) => {
  const lone = await deploymentStack(env)
  // Read before the create: a minute of this clock is 3 real seconds, and on a loaded machine the create alone may
  // take longer, so an occurrence after the deployment's creation may come before `from` below.
  const beforeCreate = clock()
  const { deployment } = await deploy(lone.client, { schedule: { type: 'cron', expression: '* * * * *', timezone: 'UTC' } })
  // Three minutes of the clock (9 s) with nothing orchestrating.
  const from = clock()
  await until('three minutes', () => clock() >= from + 3 * MIN, 15_000, 100)
  t.equal((await scheduledRuns(lone.client, deployment.id)).count, 0, 'no scheduled run without an orchestrator')
  const o = await startTroupe({ role: 'orchestrate', natsUrl: lone.nats.url, env })
  t.teardown(() => o.killNow())
  const runs = await until(
    'a run',
    async () => (await scheduledRuns(lone.client, deployment.id)).at.length > 0 && scheduledRuns(lone.client, deployment.id),
    20_000,
    250,
  )
  t.ok(runs.at[0]! > beforeCreate, 'it fires the occurrences of the catch-up window, none older than the deployment')
})

t.test('through the API: pause stops firing, unpause resumes without backfill, a fatal run error pauses', async (t: Test) => {
  const o = await orchestrate()
  t.teardown(() => o.killNow())
  const { env: environment, deployment } = await deploy(s.client, { schedule: { type: 'cron', expression: '* * * * *', timezone: 'UTC' } })
  await until('a run', async () => (await scheduledRuns(s.client, deployment.id)).count >= 1, 20_000, 250)
  await s.client.beta.deployments.pause(deployment.id)
  const pausedAt = clock()
  const before = (await scheduledRuns(s.client, deployment.id)).at
  await until('three minutes paused', () => clock() >= pausedAt + 3 * MIN, 15_000, 100)
  const during = (await scheduledRuns(s.client, deployment.id)).at
  t.ok(
    during.every((at) => at <= pausedAt),
    `nothing fired for the paused minutes (${during.length - before.length} fired as the pause landed)`,
  )
  const resumed = await s.client.beta.deployments.unpause(deployment.id)
  const resumedAt = clock()
  const next = Date.parse((resumed.schedule as any).upcoming_runs_at[0])
  const after = await until(
    'fired again',
    async () => {
      const r = await scheduledRuns(s.client, deployment.id)
      return r.at.some((at) => at > pausedAt) && r.at
    },
    20_000,
    250,
  )
  t.equal(
    after.find((at) => at > pausedAt),
    next,
    'the first occurrence after unpause, as upcoming_runs_at said',
  )
  t.ok(next >= resumedAt - MIN, 'no backfill')

  // The environment archived: the next scheduled run is refused, and the deployment pauses itself.
  await s.client.beta.environments.archive(environment.id)
  const paused = await until(
    'paused by the error',
    async () => {
      const d = await s.client.beta.deployments.retrieve(deployment.id)
      return d.paused_reason?.type === 'error' && d
    },
    20_000,
    250,
  )
  t.same(paused.paused_reason, { type: 'error', error: { type: 'environment_archived_error' } })
  t.equal(paused.status, 'paused')
  const pausedByError = clock()
  await until('two minutes paused', () => clock() >= pausedByError + 2 * MIN, 15_000, 100)
  const runs: any[] = []
  for await (const r of s.client.beta.deploymentRuns.list({ deployment_id: deployment.id, has_error: true } as any)) runs.push(r)
  t.equal(runs.length, 1, 'one failed run, then nothing')
  t.equal(runs[0]?.error?.type, 'environment_archived_error')
  t.equal(runs[0]?.session_id, null)
})
