// `troupe status` as a user runs it (issue 41 point 8): beside hosts, partitions and sessions, the deployments (next
// fire on the schedulers' clock, last run, paused, claims), the webhook endpoints (backlog, failure windows) and the
// fan-out's lag, and the self-hosted work queues (depth, pending, workers), each from what the cluster stores. First
// against a NATS no troupe has used (every section `none yet`), then with `troupe start` (it runs the scheduler and
// the webhook deliveries) and what the official client made.
import { spawn } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { STATUS_BUDGET_MS, type StatusReport } from '../../supervisor/inspect/status/index.js'
import { startFakeModelServer } from '../fakes/model-server.js'
import '../helpers/keepalive.js'
import { startNats } from '../helpers/nats.js'
import { asUserRuns, clientFor, raw, startTroupe } from '../helpers/troupe.js'
import { until } from '../helpers/wait.js'
import { deliveringEnv, startReceiver } from '../webhooks/_helpers.js'

const BIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../bin/troupe.mjs')
const nats = await startNats()
t.teardown(() => nats.stopNow())

/** `node bin/troupe.mjs status …` as a user runs it, with NATS_URL set: its exit code and output. */
function status(args: string[] = [], more: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string; ms: number }> {
  const env = { ...process.env, NATS_URL: nats.url, ...more } as NodeJS.ProcessEnv
  delete env.TROUPE_SCHEDULE_CLOCK
  Object.assign(env, more)
  const [cmd, ...argv] = asUserRuns([process.execPath, BIN, 'status', ...args], env)
  const t0 = Date.now()
  const proc = spawn(cmd!, argv, { env, stdio: ['ignore', 'pipe', 'pipe'] })
  t.teardown(() => void (proc.exitCode === null && proc.signalCode === null && proc.kill('SIGKILL')))
  let stdout = ''
  let stderr = ''
  proc.stdout.on('data', (d) => (stdout += d))
  proc.stderr.on('data', (d) => (stderr += d))
  return new Promise((resolve) => proc.once('close', (code) => resolve({ code, stdout, stderr, ms: Date.now() - t0 })))
}

async function report(): Promise<StatusReport> {
  const r = await status(['--json'])
  if (r.code !== 0) throw new Error(`troupe status --json exited with ${r.code}: ${r.stderr}`)
  return JSON.parse(r.stdout)
}

t.test('a NATS no troupe has used: every section says none yet, and which bucket is not there', async (t) => {
  const text = await status()
  t.equal(text.code, 0, text.stderr)
  t.match(text.stdout, /^hosts: 0 live$/m)
  t.match(text.stdout, /^sessions: none yet$/m)
  t.match(text.stdout, /^deployments: none yet \(no troupe_deployments bucket yet\)$/m)
  t.match(text.stdout, /^ {2}schedulers: NONE LIVE/m)
  t.match(text.stdout, /^webhooks: none yet \(no troupe_webhooks bucket yet\)$/m)
  t.match(text.stdout, /^ {2}fan-out: no troupe_webhook_fanout bucket yet/m)
  t.match(text.stdout, /^work queues: none yet \(no troupe_work_queues bucket yet\)$/m)
  t.notMatch(text.stdout, /PARTIAL/)

  const r = await status(['--json'], { TROUPE_SCHEDULE_CLOCK: 'start=2030-01-01T00:00:00Z,rate=1' })
  t.equal(r.code, 0, r.stderr)
  const j: StatusReport = JSON.parse(r.stdout)
  t.match(j.deployments, { total: 0, listed: [], schedulers: [], clock: { source: 'TROUPE_SCHEDULE_CLOCK', wall: false, now: /^2030-01-01T00:00:0/ } })
  t.ok(j.deployments.gaps.missing.includes('troupe_deployments'))
  t.match(j.webhooks, { total: 0, queued: null, in_flight: null, fan_out: [] })
  t.ok(j.webhooks.gaps.missing.includes('troupe_webhooks'))
  t.ok(j.webhooks.gaps.missing.includes('TROUPE_WEBHOOK_DELIVERIES'))
  t.match(j.work_queues, { total: 0, listed: [], gaps: { missing: ['troupe_work_queues'], cut: [] } })
})

t.test('deployments, webhook endpoints and work queues as the cluster stores them', async (t) => {
  const receiver = await startReceiver(() => 500)
  const model = await startFakeModelServer()
  t.teardown(async () => {
    receiver.close()
    await model.close()
  })
  // The schedule clock 10 times as fast as wall time from 2026-03-01 00:00: an every-minute schedule fires every 6 s,
  // an hourly one not before six minutes have passed.
  const troupe = await startTroupe({
    role: 'start',
    natsUrl: nats.url,
    env: deliveringEnv(receiver, model, { TROUPE_SCHEDULE_CLOCK: `start=2026-03-01T00:00:00Z,rate=10,since=${Date.now()}` }),
  })
  t.teardown(() => troupe.killNow())
  const client = clientFor(troupe.url, { maxRetries: 3 })
  const H = { 'x-api-key': 'k', 'anthropic-version': '2023-06-01' }

  // Webhook endpoints first, so what follows makes events for them: one whose receiver answers 500, one disabled.
  const types = ['deployment.created', 'deployment.paused', 'deployment_run.started', 'session.created', 'session.status_idled']
  const failing = await raw(troupe.url, 'POST', '/v1/webhooks', { url: 'https://hooks.example.test/fails', event_types: types }, H)
  t.equal(failing.status, 200, failing.text)
  const off = await raw(troupe.url, 'POST', '/v1/webhooks', { url: 'https://other.example.test/off', event_types: types }, H)
  t.equal((await raw(troupe.url, 'POST', `/v1/webhooks/${off.json.id}`, { status: 'disabled' }, H)).status, 200)

  const agent = await client.beta.agents.create({ name: 'a', model: 'claude-sonnet-4-5' } as any)
  const env = await client.beta.environments.create({ name: 'cloud' } as any)
  const hello = [{ type: 'user.message', content: [{ type: 'text', text: 'hello' }] }]
  const deploy = (name: string, expression: string) =>
    client.beta.deployments.create({
      name,
      agent: agent.id,
      environment_id: env.id,
      initial_events: hello,
      schedule: { type: 'cron', expression, timezone: 'UTC' },
    } as any)
  const hourly = await deploy('hourly', '0 * * * *')
  const often = await deploy('often', '* * * * *')
  const gone = await deploy('gone', '0 0 * * *')
  await client.beta.deployments.archive(gone.id)

  // The every-minute one fires within 6 s; once a scheduled run is recorded, it is paused.
  const firstRun = await until('a scheduled run of the every-minute deployment', async () => {
    for await (const r of client.beta.deploymentRuns.list({ deployment_id: often.id } as any)) if ((r as any).trigger_context.type === 'schedule') return r
    return undefined
  })
  t.ok(firstRun)
  await client.beta.deployments.pause(often.id)

  // A self-hosted queue: three sessions' items, one acknowledged (a worker holds its lease), one handed out, one queued.
  const selfHosted = await client.beta.environments.create({ name: 'self', config: { type: 'self_hosted' } } as any)
  for (let i = 0; i < 3; i++) await client.beta.sessions.create({ agent: agent.id, environment_id: selfHosted.id } as any)
  const work = client.beta.environments.work
  const claimed = (await work.poll(selfHosted.id))!
  await work.ack(claimed.id, { environment_id: selfHosted.id })
  t.ok(await work.poll(selfHosted.id), 'the second item is handed out')

  // The scheduler's claim on the paused deployment's occurrence done, the failing receiver's window open while its
  // deliveries wait, and the fan-out caught up with every source: each a matter of moments.
  const r = await until(
    'the claim done, a failure window open with a backlog, the fan-out caught up',
    async () => {
      const r = await report()
      const often$ = r.deployments.listed.find((d) => d.id === often.id)
      const fails = r.webhooks.listed.find((e) => e.id === failing.json.id)
      const caughtUp = r.webhooks.fan_out.some((f) => f.reading === 'source') && r.webhooks.fan_out.every((f) => f.reading === 'audit' || f.lag === 0)
      return often$?.claim?.state === 'done' && often$.pending_runs === 0 && fails?.failing && fails.backlog > 0 && caughtUp && r
    },
    60_000,
    250,
  )

  // Deployments.
  const runs: any[] = []
  for await (const x of client.beta.deploymentRuns.list({ deployment_id: often.id } as any)) runs.push(x)
  const newest = runs.sort((a, b) => b.created_at.localeCompare(a.created_at))[0]
  const scheduled = runs.filter((x) => x.trigger_context.type === 'schedule').sort((a, b) => b.created_at.localeCompare(a.created_at))[0]
  t.match(r.deployments, { total: 3, active: 1, paused: 1, archived: 1, more: 0 })
  t.match(r.deployments.clock, { source: 'scheduler', rate: 10, wall: false }, 'the schedulers’ clock, not wall time')
  t.ok(Date.parse(r.deployments.clock.now) < Date.parse('2026-03-02T00:00:00Z'), `${r.deployments.clock.now} is on the test's clock`)
  t.equal(r.deployments.schedulers.length, 1)
  t.equal(r.deployments.clock.scheduler, r.deployments.schedulers[0]!.id)
  t.same(
    r.deployments.listed.map((d) => d.id),
    [hourly.id, often.id],
    'the next to fire first, the paused after; the archived counted, not listed',
  )
  const [h, o] = r.deployments.listed
  t.match(h, { name: 'hourly', status: 'active', paused_reason: null, schedule: '0 * * * * UTC', due: false, last_run: null, pending_runs: 0 })
  t.equal(h!.next_fire_at, (hourly as any).schedule.upcoming_runs_at[0], 'next fire as the server computes upcoming_runs_at, on its clock')
  t.match(o, { name: 'often', status: 'paused', paused_reason: 'manual', next_fire_at: null, schedule: '* * * * * UTC' })
  t.match(o!.last_run, { id: newest.id, created_at: newest.created_at, trigger: newest.trigger_context.type, session_id: newest.session_id, error: null })
  t.equal(o!.last_scheduled_at, scheduled.trigger_context.scheduled_at, "last_scheduled_at: the latest scheduled run's occurrence")
  t.match(o!.claim, { state: 'done', holder: null })
  t.ok(r.deployments.runs_read >= runs.length)

  // Webhooks.
  t.match(r.webhooks, { total: 2, enabled: 1, disabled: 1, failing: 1, more: 0 })
  t.ok(r.webhooks.queued! >= 1, `${r.webhooks.queued} deliveries stored`)
  t.type(r.webhooks.in_flight, 'number')
  const [fails, disabled] = r.webhooks.listed
  t.match(fails, { id: failing.json.id, url: 'https://hooks.example.test/fails', status: 'enabled', failing: { last: 'HTTP 500' } })
  t.ok(fails!.failing!.failures >= 1)
  t.ok(Date.parse(fails!.failing!.since) <= Date.now())
  t.match(disabled, { id: off.json.id, status: 'disabled', backlog: 0, failing: null })
  const sources = r.webhooks.fan_out.filter((f) => f.reading === 'source').map((f) => f.stream)
  for (const s of ['TROUPE_EVENTS', 'TROUPE_OUTBOX', 'KV_troupe_deployments', 'KV_troupe_sessions']) t.ok(sources.includes(s), `the fan-out of ${s} is shown`)
  t.ok(
    r.webhooks.fan_out.filter((f) => f.reading === 'source').every((f) => f.lease === 'live' && f.holder),
    'each source read by a live holder',
  )
  t.ok(
    r.webhooks.fan_out.some((f) => f.reading === 'audit'),
    'the audit’s positions too',
  )

  // Work queues.
  t.match(r.work_queues, { total: 1, totals: { depth: 1, pending: 1, running: 1, stopping: 0, workers: 1 }, more: 0, idle: 0 })
  t.match(r.work_queues.listed, [{ environment_id: selfHosted.id, depth: 1, pending: 1, running: 1, workers: 1, stopped: 0 }])
  t.ok(r.work_queues.listed[0]!.oldest_queued_at)

  for (const g of [r.gaps, r.deployments.gaps, r.webhooks.gaps, r.work_queues.gaps]) t.same(g.cut, [], 'every read finished')
  t.ok(r.read_ms < STATUS_BUDGET_MS + 500, `read in ${r.read_ms} ms`)

  // The same as a person reads it. On a loaded machine a fan-out reader's late lease renewal reads as a lapse, and a
  // read past the budget as PARTIAL, both true at that moment: the text is read again until it is whole and every
  // source shows a live reader, as the report above did.
  const fanOutLive = /^ {2}fan-out: lag .*TROUPE_EVENTS \d+.*; each read under a live lease$/m
  const text = await until(
    'the text shows every source read under a live lease',
    async () => {
      const x = await status()
      return (x.code !== 0 || (fanOutLive.test(x.stdout) && !/PARTIAL|not there yet/.test(x.stdout))) && x
    },
    30_000,
    200,
  )
  t.equal(text.code, 0, text.stderr)
  t.equal(text.stderr, '', 'nothing on stderr')
  const out = text.stdout
  t.match(out, /^deployments: 3 \(1 active, 1 paused, 1 archived\)$/m)
  t.match(out, /^ {2}schedule clock: 2026-03-\S+, 10× wall time, from scheduler orch_\w+'s beat; times below are on this clock$/m)
  t.match(out, /^ {2}schedulers: 1 live: orch_\w+ \(beat \d+\.\ds ago\)$/m)
  t.match(
    out,
    new RegExp(
      `^  ${hourly.id}  "hourly"  cron 0 \\* \\* \\* \\* UTC  next ${h!.next_fire_at!.replace(/\./g, '\\.')} \\(in [^)]+\\)  last run none seen$`,
      'm',
    ),
  )
  t.match(
    out,
    new RegExp(
      `^  ${often.id}  "often"  PAUSED \\(manual\\)  cron \\* \\* \\* \\* \\* UTC  last run \\S+ \\([^)]+\\) \\w+ → sesn_\\w+  last scheduled \\S+  claim \\S+ done`,
      'm',
    ),
  )
  t.notMatch(out, new RegExp(gone.id), 'the archived deployment is counted, not listed')
  t.match(
    out,
    /^webhooks: 2 endpoints \(1 enabled, 1 disabled\); \d+ deliver(y|ies) stored, \d+ of them claimed \(attempting or waiting for a retry\); 1 failing$/m,
  )
  t.match(
    out,
    new RegExp(
      `^  ${failing.json.id}  enabled  https://hooks\\.example\\.test/fails  backlog \\d+  FAILING since \\S+ \\(\\S+ ago\\): \\d+ failed attempts?, last HTTP 500$`,
      'm',
    ),
  )
  t.match(out, new RegExp(`^  ${off.json.id}  DISABLED  https://other\\.example\\.test/off  backlog 0  not failing$`, 'm'))
  t.match(out, fanOutLive)
  t.match(out, /^ {2}audit \(a minute behind by design\): lag /m)
  t.match(out, /^work queues: 1 environment; 1 queued, 1 pending, 1 running, 0 stopping; 1 worker holding a lease$/m)
  t.match(out, new RegExp(`^  ${selfHosted.id}  queued 1  pending 1  running 1  stopping 0  workers 1  oldest queued \\S+ \\(\\S+ ago\\)`, 'm'))
  t.notMatch(out, /PARTIAL|not there yet/)
  t.comment(`troupe status answered in ${text.ms} ms (node's start included), its reads ${r.read_ms} ms`)
})
