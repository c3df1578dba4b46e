// Measurement only (not committed): how long `troupe status` takes on a store holding many records.
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { jetstream } from '@nats-io/jetstream'
import { Kvm } from '@nats-io/kv'
import { connect } from '@nats-io/transport-node'
import { encode } from '../protocol/codec.js'
import { startNats } from './helpers/nats.js'

const [sessions, deployments, endpoints, queues, runs] = (process.argv[2] ?? '50000,5000,500,1000,20000').split(',').map(Number)
const nats = await startNats()
const nc = await connect({ servers: nats.url })
const js = jetstream(nc)
const kvm = new Kvm(js)
const pad = 'x'.repeat(800)
async function fill(bucket: string, n: number, key: (i: number) => string, value: (i: number) => unknown) {
  const kv = await kvm.create(bucket, { history: 1 })
  const t0 = Date.now()
  for (let i = 0; i < n; i += 500) {
    await Promise.all(Array.from({ length: Math.min(500, n - i) }, (_, j) => kv.put(key(i + j), encode(value(i + j)))))
  }
  console.error(`${bucket}: ${n} in ${Date.now() - t0} ms`)
}
const id = (p: string, i: number) => `${p}_${String(i).padStart(26, '0')}`
await fill(
  'troupe_sessions',
  sessions!,
  (i) => `session.${id('sesn', i)}`,
  (i) => ({ session: { id: id('sesn', i), status: i % 10 === 0 ? 'running' : 'idle', agent: { id: 'agent_x' }, pad }, running_since: Date.now() }),
)
await fill(
  'troupe_deployments',
  deployments!,
  (i) => `deployment.${id('depl', i)}`,
  (i) => ({
    deployment: {
      id: id('depl', i),
      name: `d${i}`,
      status: i % 7 === 0 ? 'paused' : 'active',
      paused_reason: i % 7 === 0 ? { type: 'manual' } : null,
      archived_at: null,
      schedule: { type: 'cron', expression: `${i % 60} * * * *`, timezone: 'UTC', last_run_at: null },
      pad,
    },
    fires_from: new Date().toISOString(),
    last_scheduled_at: null,
    runs: [],
  }),
)
await fill(
  'troupe_deployment_runs',
  runs!,
  (i) => `run.${id('drun', i)}`,
  (i) => ({
    id: id('drun', i),
    deployment_id: id('depl', i % deployments!),
    session_id: id('sesn', i),
    error: null,
    trigger_context: { type: 'schedule', scheduled_at: new Date().toISOString() },
    created_at: new Date(Date.now() - runs! + i).toISOString(),
    pad,
  }),
)
await fill(
  'troupe_webhooks',
  endpoints!,
  (i) => `webhook.${id('whep', i)}`,
  (i) => ({
    endpoint: { id: id('whep', i), url: `https://h${i}.example.com/x`, status: 'enabled', disabled_reason: null, event_types: [] },
    secret: {},
    enabled: [],
  }),
)
await fill(
  'troupe_work_queues',
  queues!,
  (i) => `work_queue.${id('env', i)}`,
  (i) => ({
    items: Array.from({ length: 5 }, (_, k) => ({
      id: `work_${i}_${k}`,
      session_id: 'sesn_x',
      state: k === 0 ? 'queued' : 'stopped',
      handed_at: null,
      lease_until: null,
      created_at: new Date().toISOString(),
      latest_heartbeat_at: null,
      pad,
    })),
  }),
)
await nc.close()
for (let k = 0; k < 3; k++) {
  const t0 = Date.now()
  const r = await promisify(execFile)(process.execPath, ['bin/troupe.mjs', 'status', '--json'], {
    env: { ...process.env, NATS_URL: nats.url },
    maxBuffer: 1 << 26,
  })
  const j = JSON.parse(r.stdout)
  const cuts = [j.gaps, j.deployments.gaps, j.webhooks.gaps, j.work_queues.gaps].flatMap((g: any) => g.cut)
  console.log(
    `run ${k}: ${Date.now() - t0} ms wall, reads ${j.read_ms} ms; sessions ${j.sessions.total}, deployments ${j.deployments.total}, endpoints ${j.webhooks.total}, queues ${j.work_queues.total}, runs read ${j.deployments.runs_read}; cut: ${JSON.stringify(cuts)}`,
  )
}
await nats.stop()
