import t from 'tap'
import { encode } from '../../protocol/codec.js'
import type { DeploymentState, OrchestratorBeat } from '../../actors/deployment/index.js'
import type { StatusReport } from '../../supervisor/inspect/status/index.js'
import { scheduleClock } from '../../supervisor/inspect/status/clock.js'
import { deploymentOf } from '../../supervisor/inspect/status/deployments.js'
import { Reads } from '../../supervisor/inspect/status/reads.js'
import { render } from '../../supervisor/inspect/status/render.js'
import { figures } from '../../supervisor/inspect/status/metrics.js'

// `troupe status`'s parts that need no NATS: which schedule clock it reads times on, how a read that runs out of time
// ends, and what an empty cluster's report says. The sections' reads are checked against a running server in
// test/supervisor/status.test.ts.

const NOW = Date.parse('2026-11-29T12:00:00Z')
const beats = (entries: Record<string, OrchestratorBeat>) => new Map(Object.entries(entries).map(([id, b]) => [`orch.${id}`, encode(b)]))

t.test('the schedule clock comes from a live scheduler, else TROUPE_SCHEDULE_CLOCK here, else wall time', async (t) => {
  const fast = scheduleClock(beats({ orch_A: { at: NOW - 500, clock: Date.parse('2030-01-01T00:00:00Z'), rate: 10 } }), NOW, {})
  t.same(fast.schedulers, [{ id: 'orch_A', beat_age_ms: 500 }])
  t.match(
    fast.clock,
    { source: 'scheduler', scheduler: 'orch_A', rate: 10, wall: false, now: '2030-01-01T00:00:05.000Z' },
    'its reading carried on at its rate',
  )
  t.equal(fast.at, Date.parse('2030-01-01T00:00:05Z'))

  const env = { TROUPE_SCHEDULE_CLOCK: `start=2031-01-01T00:00:00Z,rate=2,since=${NOW - 1000}` }
  const older = scheduleClock(beats({ orch_B: { at: NOW - 200 } }), NOW, env)
  t.match(
    older.clock,
    { source: 'TROUPE_SCHEDULE_CLOCK', now: '2031-01-01T00:00:02.000Z', rate: 2, wall: false },
    "a beat of an earlier version tells none: this process's setting",
  )
  t.equal(older.schedulers.length, 1, 'the scheduler is live all the same')

  const wall = scheduleClock(beats({ orch_C: { at: NOW - 10_000, clock: 0, rate: 1 } }), NOW, { TROUPE_SCHEDULE_CLOCK: 'nonsense' })
  t.same(wall.schedulers, [], 'a beat older than the TTL is no live scheduler')
  t.match(wall.clock, { source: 'wall', now: new Date(NOW).toISOString(), rate: 1, wall: true }, 'a setting that does not parse is no clock')

  const same = scheduleClock(beats({ orch_D: { at: NOW - 100, clock: NOW - 100, rate: 1 } }), NOW, {})
  t.match(same.clock, { source: 'scheduler', wall: true }, 'a scheduler on wall time says so')
})

t.test("a deployment's next fire is the scheduler's: after its last scheduled run and fires_from, five minutes of catch-up", async (t) => {
  const at = Date.parse('2030-01-01T10:30:00Z')
  const state = (o: Partial<DeploymentState> & { paused?: boolean; expression?: string | null } = {}): DeploymentState => ({
    deployment: {
      id: 'depl_1',
      type: 'deployment',
      name: 'd',
      description: null,
      agent: { type: 'agent', id: 'agent_1', version: 1 },
      environment_id: 'env_1',
      initial_events: [],
      resources: [],
      vault_ids: [],
      metadata: {},
      schedule: o.expression === null ? null : { type: 'cron', expression: o.expression ?? '0 * * * *', timezone: 'UTC', last_run_at: null },
      status: o.paused ? 'paused' : 'active',
      paused_reason: o.paused ? { type: 'error', error: { type: 'agent_archived_error' } } : null,
      budget: null,
      created_at: '2030-01-01T00:00:00Z',
      updated_at: '2030-01-01T00:00:00Z',
      archived_at: null,
    } as DeploymentState['deployment'],
    fires_from: o.fires_from ?? '2030-01-01T00:00:00.000Z',
    last_scheduled_at: o.last_scheduled_at ?? null,
    runs: o.runs ?? [],
  })
  t.match(deploymentOf(state({ last_scheduled_at: '2030-01-01T10:00:00.000Z' }), undefined, undefined, at), {
    next_fire_at: '2030-01-01T11:00:00.000Z',
    due: false,
    schedule: '0 * * * * UTC',
    last_run: null,
    claim: null,
  })
  const missed = deploymentOf(state({ expression: '28 * * * *', last_scheduled_at: '2030-01-01T09:28:00.000Z' }), undefined, undefined, at)
  t.match(missed, { next_fire_at: '2030-01-01T10:28:00.000Z', due: true }, 'an occurrence two minutes past and not fired is due (catch-up)')
  const old = deploymentOf(state({ expression: '20 * * * *', last_scheduled_at: '2030-01-01T09:20:00.000Z' }), undefined, undefined, at)
  t.equal(old.next_fire_at, '2030-01-01T11:20:00.000Z', 'one ten minutes past never fires: the next after it')
  t.equal(
    deploymentOf(state({ fires_from: '2030-01-01T12:00:00.000Z' }), undefined, undefined, at).next_fire_at,
    '2030-01-01T12:00:00.000Z',
    'nothing before fires_from',
  )
  t.match(deploymentOf(state({ paused: true }), undefined, undefined, at), {
    status: 'paused',
    paused_reason: 'agent_archived_error',
    next_fire_at: null,
    due: false,
  })
  t.match(deploymentOf(state({ expression: null }), undefined, undefined, at), { schedule: null, next_fire_at: null })

  const run = {
    id: 'drun_1',
    type: 'deployment_run',
    deployment_id: 'depl_1',
    agent: { type: 'agent', id: 'agent_1', version: 1 },
    session_id: null,
    error: { type: 'agent_archived_error', message: 'gone' },
    trigger_type: 'schedule',
    trigger_context: { type: 'schedule', scheduled_at: '2030-01-01T10:00:00.000Z' },
    created_at: '2030-01-01T10:00:00.100Z',
  } as const
  const held = deploymentOf(state(), run as never, { at: Date.parse('2030-01-01T11:00:00Z'), value: { holder: 'orch_A', until: at + 1000 } }, at)
  t.same(held.last_run, { id: 'drun_1', created_at: '2030-01-01T10:00:00.100Z', trigger: 'schedule', session_id: null, error: 'agent_archived_error' })
  t.same(held.claim, { occurrence: '2030-01-01T11:00:00.000Z', holder: 'orch_A', state: 'held' })
  t.match(deploymentOf(state(), undefined, { at, value: { holder: 'orch_A', until: at - 1 } }, at).claim, { state: 'lapsed' })
  t.match(deploymentOf(state(), undefined, { at, value: { done: 'queued' } }, at).claim, { state: 'done', holder: null, outcome: 'queued' })
})

t.test('a read still going when the time runs out ends with nothing, recorded as cut', async (t) => {
  const time = new AbortController()
  const reads = new Reads(undefined as never, undefined as never, time.signal)
  const hanging = reads.inTime('KV_troupe_big', () => new Promise<number>(() => {}))
  time.abort()
  t.equal(await hanging, undefined)
  t.equal(await reads.inTime('after', async () => 1), undefined, 'nothing starts once the time is out')
  t.same(reads.gaps, { missing: [], cut: ['out of time reading KV_troupe_big', 'out of time before reading after'] })
  const failing = new Reads(undefined as never, undefined as never, new AbortController().signal)
  t.equal(await failing.inTime('KV_troupe_x', () => Promise.reject(new Error('TIMEOUT'))), undefined, 'a failed read is a gap, not a crash')
  t.same(failing.gaps.cut, ['KV_troupe_x failed: TIMEOUT'])
  const fresh = new Reads(undefined as never, undefined as never, new AbortController().signal)
  t.equal(await fresh.inTime('quick', async () => 7), 7)
  t.same(fresh.gaps.cut, [])
})

t.test('an empty cluster: each section says none yet, and which bucket does not exist', async (t) => {
  const gaps = (...missing: string[]) => ({ missing, cut: [] })
  const report: StatusReport = {
    nats: { url: 'nats://127.0.0.1:1', server: '2.9.10' },
    hosts: [],
    sandbox_hosts: [],
    partitions: null,
    sessions: { total: 0, by_status: {}, running: [], running_more: 0 },
    gaps: gaps('troupe_hosts', 'troupe_placement', 'troupe_sessions'),
    deployments: {
      total: 0,
      active: 0,
      paused: 0,
      archived: 0,
      clock: { source: 'wall', now: new Date(NOW).toISOString(), rate: 1, wall: true },
      schedulers: [],
      listed: [],
      more: 0,
      runs_read: 0,
      gaps: gaps('troupe_deployments', 'troupe_orchestrators'),
    },
    webhooks: {
      total: 0,
      enabled: 0,
      disabled: 0,
      listed: [],
      more: 0,
      queued: null,
      in_flight: null,
      failing: 0,
      fan_out: [],
      gaps: gaps('troupe_webhooks', 'troupe_webhook_fanout'),
    },
    work_queues: {
      total: 0,
      totals: { depth: 0, pending: 0, running: 0, stopping: 0, workers: 0 },
      listed: [],
      more: 0,
      idle: 0,
      gaps: gaps('troupe_work_queues'),
    },
    metrics: { hosts: [], totals: figures([]) },
    read_ms: 3,
  }
  const text = render(report, NOW).join('\n')
  t.match(text, /^hosts: 0 live$/m)
  t.match(text, /^partitions: no troupe_placement bucket/m)
  t.match(text, /^sessions: none yet$/m)
  t.match(text, /^deployments: none yet \(no troupe_deployments bucket yet\)$/m)
  t.match(text, /^ {2}schedule clock: wall time$/m)
  t.match(text, /^ {2}schedulers: NONE LIVE/m)
  t.match(text, /^ {2}not there yet: troupe_orchestrators$/m, 'the other buckets it reads are named once, not the one the heading names')
  t.match(text, /^webhooks: none yet \(no troupe_webhooks bucket yet\)$/m)
  t.match(text, /^ {2}fan-out: no troupe_webhook_fanout bucket yet/m)
  t.match(text, /^work queues: none yet \(no troupe_work_queues bucket yet\)$/m)
  t.match(text, /^metrics: no live host with a gateway/m)
  t.notMatch(text, /PARTIAL/)

  report.deployments.gaps = gaps()
  report.deployments.gaps.cut.push('out of time reading troupe_deployments deployment.*: read 10 of 90000 keys')
  t.match(
    render(report, NOW).join('\n'),
    /^deployments: none yet$\n[\s\S]*^ {2}PARTIAL: out of time reading troupe_deployments deployment\.\*: read 10 of 90000 keys$/m,
  )
})
