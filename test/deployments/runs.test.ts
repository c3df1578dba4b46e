import t from 'tap'
import { jetstreamManager } from '@nats-io/jetstream'
import { connect } from '@nats-io/transport-node'
import { Kvm } from '@nats-io/kv'
import { askActor } from '../../actors/kit/wire.js'
import { decode, encode } from '../../protocol/codec.js'
import { DeploymentKind, type FireReply } from '../../protocol/ops/deployment.js'
import { Buckets, OUTBOX_STREAM, WORKSPACE_ID, opSubject, outboxSubject } from '../../protocol/subjects.js'
import { raw } from '../helpers/troupe.js'
import { HELLO, deploy, deploymentStack, failure } from './_helpers.js'

// SPEC "Deployments" rules on runs (issue 24, point 3), manual runs through the official client; scheduled runs by the
// `fire` op the scheduler calls, against a schedule clock the test sets (TROUPE_SCHEDULE_CLOCK), so nothing waits.

const START = Date.parse('2030-01-01T00:00:00Z')
// The local backend refuses limited networking at admission: the runs' rejections below rely on it.
const s = await deploymentStack({ TROUPE_SCHEDULE_CLOCK: `start=${new Date(START).toISOString()},rate=1`, TROUPE_SANDBOX: 'local' })
const deployments = s.client.beta.deployments
const runs = s.client.beta.deploymentRuns
const nc = await connect({ servers: s.nats.url })
t.teardown(() => nc.close())

const fire = (id: string, scheduled_at: string) =>
  askActor<FireReply>(nc, opSubject(DeploymentKind.ops.fire, id), { op: 'fire', rid: 'req_test', params: {}, query: {}, body: { scheduled_at } }, 10_000)
const EVERY_MINUTE = { type: 'cron', expression: '* * * * *', timezone: 'UTC' }
/** An occurrence of an every-minute schedule after the deployment was made (the clock reads START onwards). */
const minute = (n: number) => new Date(START + n * 60_000).toISOString()

/** Waits until `check` holds, polling (runs fired are recorded by the owner's work step, a moment later). */
async function until<T>(read: () => Promise<T>, check: (v: T) => boolean, what: string): Promise<T> {
  for (let i = 0; i < 200; i++) {
    const v = await read()
    if (check(v)) return v
    await new Promise((r) => setTimeout(r, 50))
  }
  throw new Error(`timed out waiting for ${what}`)
}
/** The record of a fired run, once its owner's work step has made it. */
const recorded = (runId: string) =>
  until(
    () => runs.retrieve(runId).catch(() => undefined),
    (r) => r !== undefined,
    `run ${runId}`,
  ).then((r) => r!)
const listRuns = async (q: Record<string, unknown>) => {
  const out: any[] = []
  for await (const r of runs.list(q as any)) out.push(r)
  return out
}

t.test('a manual run creates its session from the deployment as it is', async (t) => {
  const budget = { type: 'limit', max_list_cost: { amount: '500', currency: 'USD' } }
  const events = [...HELLO, { type: 'system.message', content: [{ type: 'text', text: 'from the deployment' }] }]
  const { agent, deployment: d } = await deploy(s.client, { budget, initial_events: events })
  await s.client.beta.agents.update(agent.id, { version: 1, system: 'v2' } as any)
  const run = await deployments.run(d.id)
  t.match(run.id, /^drun_/)
  t.equal(run.type, 'deployment_run')
  t.equal(run.deployment_id, d.id)
  t.same(run.agent, { type: 'agent', id: agent.id, version: 1 }, 'the pinned version, not the latest')
  t.same(run.trigger_context, { type: 'manual' })
  t.equal((run as any).trigger_type, 'manual', "SPEC's trigger_type beside the client's trigger_context")
  t.equal(run.error, null)
  t.match(run.session_id, /^sesn_/)
  const session = await s.client.beta.sessions.retrieve(run.session_id!)
  t.equal(session.deployment_id, d.id)
  t.equal(session.agent.version, 1)
  t.same(session.budget, budget)
  const sent = await until(
    async () => {
      const out: any[] = []
      for await (const e of s.client.beta.sessions.events.list(run.session_id!, { order: 'asc' } as any)) out.push(e)
      return out
    },
    (es) => es.some((e) => e.type === 'system.message'),
    'the initial events',
  )
  t.same(
    sent.filter((e) => e.type === 'user.message' || e.type === 'system.message').map((e) => e.type),
    ['user.message', 'system.message'],
  )
  const byDeployment: string[] = []
  for await (const x of s.client.beta.sessions.list({ deployment_id: d.id } as any)) byDeployment.push(x.id)
  t.same(byDeployment, [run.session_id], 'GET /v1/sessions?deployment_id= finds it')
  t.same(await runs.retrieve(run.id), run)
  t.equal((await deployments.retrieve(d.id)).schedule, null, 'a manual run sets no last_run_at (no schedule here)')
})

t.test('a run whose session is refused records the error and no session', async (t) => {
  const { env, deployment: d } = await deploy(s.client)
  await s.client.beta.environments.archive(env.id)
  const run = await deployments.run(d.id)
  t.equal(run.session_id, null)
  t.equal(run.error?.type, 'environment_archived_error')
  t.match(run.error?.message, /archived/)
  const sessions: string[] = []
  for await (const x of s.client.beta.sessions.list({ deployment_id: d.id, include_archived: true } as any)) sessions.push(x.id)
  t.same(sessions, [], 'no session')
  t.equal((await deployments.retrieve(d.id)).status, 'active', 'a manual run never pauses')

  const { agent, deployment: d2 } = await deploy(s.client)
  await s.client.beta.agents.archive(agent.id)
  t.equal((await deployments.run(d2.id)).error?.type, 'agent_archived_error')

  const limited = await s.client.beta.environments.create({
    name: 'limited',
    config: { type: 'cloud', networking: { type: 'limited', allowed_hosts: ['example.com'] } },
  } as any)
  const { deployment: d3 } = await deploy(s.client)
  await deployments.update(d3.id, { environment_id: limited.id })
  const rejected = await deployments.run(d3.id)
  t.equal(rejected.error?.type, 'session_creation_rejected_error')
  t.match(rejected.error?.message, /limited networking/)
})

t.test('Idempotency-Key: a retried run is the same run', async (t) => {
  const { deployment: d } = await deploy(s.client)
  const key = `run-${Date.now()}`
  const a = await raw(s.url, 'POST', `/v1/deployments/${d.id}/run`, undefined, { 'idempotency-key': key })
  const b = await raw(s.url, 'POST', `/v1/deployments/${d.id}/run`, undefined, { 'idempotency-key': key })
  t.equal(a.status, 200)
  t.same(b.json, a.json)
  t.equal((await listRuns({ deployment_id: d.id })).length, 1)
  const missing = await failure(deployments.run('depl_01NOSUCHDEPLOYMENT000000000'))
  t.equal(missing.status, 404)
})

t.test('fire: an occurrence queues one run; again, a duplicate; otherwise skipped', async (t) => {
  const { deployment: d } = await deploy(s.client, { schedule: EVERY_MINUTE })
  t.ok(d.schedule!.upcoming_runs_at![0]!.startsWith('2030-01-01T00:'), 'upcoming runs follow the schedule clock')
  const q = await fire(d.id, minute(2))
  t.equal(q.outcome, 'queued')
  t.match(q.run_id, /^drun_/)
  t.same(await fire(d.id, minute(2)), { outcome: 'duplicate', run_id: q.run_id })
  t.equal((await fire(d.id, minute(1))).outcome, 'duplicate', 'an occurrence before the last one fired')
  t.equal((await fire(d.id, '2030-01-01T00:03:30Z')).outcome, 'skipped', 'not an occurrence')
  t.equal((await fire(d.id, '2029-12-31T23:59:00Z')).outcome, 'duplicate')
  const run = await recorded(q.run_id!)
  t.same(run.trigger_context, { type: 'schedule', scheduled_at: minute(2) })
  t.equal((run as any).trigger_type, 'schedule')
  t.same(
    (await listRuns({ deployment_id: d.id, trigger_type: 'schedule' })).map((r) => [r.id, r.trigger_type]),
    [[run.id, 'schedule']],
    'listed with it too',
  )
  t.match(run.session_id, /^sesn_/)
  t.equal((await deployments.retrieve(d.id)).schedule?.last_run_at, run.created_at, 'last_run_at is the run')
  const msg = await (await jetstreamManager(nc)).streams.getMessage(OUTBOX_STREAM, { last_by_subj: outboxSubject('deployment_run.succeeded') })
  const event = JSON.parse(new TextDecoder().decode(msg!.data))
  t.match(event, { type: 'event', id: /^whe_/, data: { type: 'deployment_run.succeeded', id: run.id, workspace_id: WORKSPACE_ID } })
  t.ok(Date.parse(event.created_at))

  await deployments.pause(d.id)
  t.same(await fire(d.id, minute(5)), { outcome: 'skipped', why: 'paused' })
  t.equal((await deployments.unpause(d.id)).schedule?.upcoming_runs_at?.length, 5)
  const { deployment: fresh } = await deploy(s.client, { schedule: EVERY_MINUTE })
  t.same(await fire(fresh.id, minute(0)), { outcome: 'skipped', why: 'before the schedule was set or unpaused' }, 'no backfill')
  const { deployment: manual } = await deploy(s.client)
  t.same(await fire(manual.id, minute(5)), { outcome: 'skipped', why: 'no schedule' })
  await deployments.archive(manual.id)
  t.same(await fire(manual.id, minute(5)), { outcome: 'skipped', why: 'archived' })
})

t.test('a scheduled run with a fatal error pauses its deployment; a rejected one does not', async (t) => {
  const { env, deployment: d } = await deploy(s.client, { schedule: EVERY_MINUTE })
  await s.client.beta.environments.archive(env.id)
  const q = await fire(d.id, minute(3))
  const run = await recorded(q.run_id!)
  t.equal(run.error?.type, 'environment_archived_error')
  const paused = await until(
    () => deployments.retrieve(d.id),
    (x) => x.status === 'paused',
    'the pause',
  )
  t.same(paused.paused_reason, { type: 'error', error: { type: 'environment_archived_error' } })
  const msg = await (await jetstreamManager(nc)).streams.getMessage(OUTBOX_STREAM, { last_by_subj: outboxSubject('deployment_run.failed') })
  t.equal(JSON.parse(new TextDecoder().decode(msg!.data)).data.id, run.id)

  const limited = await s.client.beta.environments.create({
    name: 'limited',
    config: { type: 'cloud', networking: { type: 'limited', allowed_hosts: ['example.com'] } },
  } as any)
  const { deployment: d2 } = await deploy(s.client, { schedule: EVERY_MINUTE })
  await deployments.update(d2.id, { environment_id: limited.id })
  const q2 = await fire(d2.id, minute(4))
  const r2 = await recorded(q2.run_id!)
  t.equal(r2.error?.type, 'session_creation_rejected_error')
  t.equal((await deployments.retrieve(d2.id)).status, 'active', 'the schedule keeps firing')
})

t.test('runs list: filters, paging and cursors bound to them', async (t) => {
  const { deployment: d } = await deploy(s.client, { schedule: EVERY_MINUTE })
  const m1 = await deployments.run(d.id)
  const q = await fire(d.id, minute(6))
  const s1 = await recorded(q.run_id!)
  await deployments.update(d.id, { environment_id: (await s.client.beta.environments.create({ name: 'x' })).id })
  const env = (await deployments.retrieve(d.id)).environment_id
  await s.client.beta.environments.archive(env)
  const m2 = await deployments.run(d.id)
  t.ok(m2.error)
  const ids = async (q: Record<string, unknown>) => (await listRuns({ deployment_id: d.id, ...q })).map((r) => r.id)
  t.same(await ids({}), [m2.id, s1.id, m1.id], 'newest first')
  t.same(await ids({ has_error: true }), [m2.id])
  t.same(await ids({ has_error: false }), [s1.id, m1.id])
  t.same(await ids({ trigger_type: 'schedule' }), [s1.id])
  t.same(await ids({ trigger_type: 'manual' }), [m2.id, m1.id])
  t.same(await ids({ 'created_at[gt]': m1.created_at }), [m2.id, s1.id])
  t.same(await ids({ 'created_at[gte]': m1.created_at, 'created_at[lt]': m2.created_at }), [s1.id, m1.id])
  t.same(await ids({ 'created_at[lte]': m1.created_at }), [m1.id])
  t.same(await ids({ limit: 1 }), [m2.id, s1.id, m1.id], 'pages of one')
  t.same(await listRuns({ deployment_id: 'depl_01NOSUCHDEPLOYMENT000000000' }), [], 'an unknown deployment: an empty page')
  const first = await raw(s.url, 'GET', `/v1/deployment_runs?deployment_id=${d.id}&limit=1`)
  t.ok(first.json.next_page)
  const moved = await raw(s.url, 'GET', `/v1/deployment_runs?deployment_id=${d.id}&limit=1&has_error=true&page=${first.json.next_page}`)
  t.equal(moved.status, 400)
  t.equal(moved.json.error.details?.error_code, 'cursor_filter_mismatch')
  for (const q of ['trigger_type=cron', 'has_error=maybe', 'deployment_id=x', 'limit=0', 'created_at[gt]=soon', 'page=junk']) {
    t.equal((await raw(s.url, 'GET', `/v1/deployment_runs?${q}`)).status, 400, q)
  }
})

t.test('a run recorded before trigger_type was stored reads with it', async (t) => {
  const { deployment: d } = await deploy(s.client)
  const run = await deployments.run(d.id)
  const kv = await new Kvm(nc).open(Buckets.deploymentRuns)
  const { trigger_type: _, ...older } = decode<Record<string, unknown>>((await kv.get(`run.${run.id}`))!.value)
  t.equal(_, 'manual', 'stored with it now')
  const id = run.id.replace(/.$/, (c) => (c === 'Z' ? 'Y' : 'Z'))
  await kv.create(`run.${id}`, encode({ ...older, id }))
  const read = await runs.retrieve(id)
  t.equal((read as any).trigger_type, 'manual')
  t.same(read, { ...run, id })
  t.ok(
    (await listRuns({ deployment_id: d.id })).every((r) => r.trigger_type === 'manual'),
    'lists too',
  )
})
