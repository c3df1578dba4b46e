import t from 'tap'
import { hostOf, placementOf, untilSplitEvenly } from '../helpers/placement.js'
import { connect } from '@nats-io/transport-node'
import '../helpers/keepalive.js'
import { askActor } from '../../actors/kit/wire.js'
import { DeploymentKind, type FireReply } from '../../protocol/ops/deployment.js'
import { opSubject } from '../../protocol/subjects.js'
import { startFakeModelServer } from '../fakes/model-server.js'
import { startNats } from '../helpers/nats.js'
import { clientFor, startTroupe, type TroupeProcess } from '../helpers/troupe.js'
import { until } from '../helpers/wait.js'
import { HELLO } from './_helpers.js'

// Issue 24, point 3: a run and its session commit atomically from the outside. The host owning a deployment is
// SIGKILLed while its runs are being committed; the other host takes the partition over and completes them: every run
// recorded once, each with its session, and no session without its run.

t.setTimeout(180_000)

const START = Date.parse('2030-01-01T00:00:00Z')
const RUNS = 60
const model = await startFakeModelServer()
const nats = await startNats()
// Both hosts read the same schedule clock.
const env = {
  TROUPE_MODEL_BASE_URL: model.url,
  ANTHROPIC_API_KEY: 'k',
  TROUPE_SCHEDULE_CLOCK: `start=${new Date(START).toISOString()},rate=1,since=${Date.now()}`,
}
const procs: TroupeProcess[] = [await startTroupe({ natsUrl: nats.url, env }), await startTroupe({ natsUrl: nats.url, env })]
t.teardown(() => {
  for (const p of procs) p.killNow()
  nats.stopNow()
  void model.close()
})
const nc = await connect({ servers: nats.url })
t.teardown(() => void nc.close())
const ownerOf = await placementOf(nc, 'deployment')

t.test('SIGKILL the owner while runs are committed: each run is recorded once, with its session', async (t) => {
  const [a, b] = procs as [TroupeProcess, TroupeProcess]
  // Both hosts serve their share before the deployment is made, so its owner can be either, and no partition moves
  // while the fires are in flight (a fire answered `handed_over` is sent again later, behind later occurrences, and is
  // then a duplicate).
  await untilSplitEvenly(nc, 'deployment', procs)
  const setup = clientFor(a.url, { maxRetries: 6 })
  const agent = await setup.beta.agents.create({ name: 'failover', model: 'claude-sonnet-4-5' })
  const environment = await setup.beta.environments.create({ name: 'failover' })
  const d = await setup.beta.deployments.create({
    name: 'failover',
    agent: agent.id,
    environment_id: environment.id,
    initial_events: HELLO,
    schedule: { type: 'cron', expression: '* * * * *', timezone: 'UTC' },
  } as any)
  const ownerId = await ownerOf(d.id)
  const owner = hostOf(a) === ownerId ? a : b
  const survivor = owner === a ? b : a

  // Fired all at once, so runs pile up pending behind the fires (an occurrence arriving after a later one is a
  // duplicate: only the queued ones count).
  const replies = await Promise.all(
    Array.from({ length: RUNS }, (_, i) => {
      const scheduled_at = new Date(START + (i + 1) * 60_000).toISOString()
      const body = { scheduled_at }
      return askActor<FireReply>(nc, opSubject(DeploymentKind.ops.fire, d.id), { op: 'fire', rid: `req_fire${i}`, params: {}, query: {}, body }, 10_000).then(
        (r) => ({ ...r, scheduled_at }),
      )
    }),
  )
  const queued = replies.filter((r) => r.outcome === 'queued')
  t.ok(queued.length > RUNS / 2, `${queued.length} of ${RUNS} fires queued`, {
    outcomes: replies.map((r) => (r.outcome === 'queued' ? 'q' : r.outcome[0])).join(''),
  })
  await owner.kill()
  const client = clientFor(survivor.url, { maxRetries: 10 })
  const before = (await client.beta.deploymentRuns.list({ deployment_id: d.id, limit: 100 } as any)).data.length
  t.comment(`${before} of ${queued.length} runs recorded when the owner died`)

  const recorded = await until(
    'every run recorded',
    async () => {
      const page = await client.beta.deploymentRuns.list({ deployment_id: d.id, limit: 100 } as any)
      return page.data.length >= queued.length && page.data
    },
    60_000,
    100,
  )
  t.same(recorded.map((r) => r.id).sort(), queued.map((r) => r.run_id).sort(), 'every queued run recorded, once')
  t.same(
    recorded.map((r) => r.trigger_context.type === 'schedule' && r.trigger_context.scheduled_at).sort(),
    queued.map((r) => r.scheduled_at).sort(),
    'one run per occurrence',
  )
  t.ok(
    recorded.every((r) => r.error === null && typeof r.session_id === 'string'),
    'each with its session',
  )
  const sessions: string[] = []
  for await (const s of client.beta.sessions.list({ deployment_id: d.id, include_archived: true } as any)) sessions.push(s.id)
  t.same(sessions.sort(), recorded.map((r) => r.session_id!).sort(), 'no session without its run')
  const last = await client.beta.deployments.retrieve(d.id)
  t.equal(
    last.schedule?.last_run_at,
    recorded
      .map((r) => r.created_at)
      .sort()
      .at(-1),
    'last_run_at is the last run',
  )
})
