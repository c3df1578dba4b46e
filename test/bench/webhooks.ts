// `npm run bench -- webhooks`: webhook deliveries from `troupe orchestrate` (default log level, stderr to a file, as
// under a supervisor) to a local HTTPS receiver in this process, with one orchestrator and then two; endpoints live on
// one `troupe serve`, all on one nats-server, every process with the same keyring.
//   throughput  BENCH_WEBHOOK_EVENTS (default 500) outbox events published at once (actors/kit/outbox.ts), each for
//               BENCH_WEBHOOK_ENDPOINTS (default 10) endpoints: deliveries per second until the receiver has every
//               (event, endpoint) once, against raw HTTPS POSTs of the same bytes to the same receiver from here, a new
//               TLS connection each as a delivery makes, 32 in flight (the delivery worker's concurrency).
//   latency     BENCH_WEBHOOK_CHANGES (default 200) session title updates one after another, each from the update's
//               request to its `session.updated` at the receiver, p50/p99, against a raw JetStream publish, pull and
//               HTTPS POST in a row (the pipeline's floor: one stored message, one consumer, one POST).
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { AckPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream'
import { connect } from '@nats-io/transport-node'
import { Outbox, webhookEventId } from '../../actors/kit/outbox.js'
import { newId } from '../../protocol/ids.js'
import { startNats } from '../helpers/nats.js'
import { clientFor, raw, startTroupe, type TroupeProcess } from '../helpers/troupe.js'
import { keyringFile, newKey } from '../vaults/_helpers.js'
import { eventOf, type Received, startReceiver } from '../webhooks/_helpers.js'
import { pool, sleep } from './bed.js'
import { rawPost } from './webhook-posts.js'

const EVENTS = Number(process.env.BENCH_WEBHOOK_EVENTS ?? 500)
const ENDPOINTS = Number(process.env.BENCH_WEBHOOK_ENDPOINTS ?? 10)
const CHANGES = Number(process.env.BENCH_WEBHOOK_CHANGES ?? 200)
/** The delivery worker's attempts in flight (actors/webhook/deliveries.ts): the raw POSTs' too. */
const IN_FLIGHT = 32
const H = { 'x-api-key': 'bench', 'anthropic-version': '2023-06-01' }
const here = path.dirname(fileURLToPath(import.meta.url))

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))] ?? Number.NaN
const fmt = (xs: number[]) => `p50 ${pct(xs, 0.5).toFixed(1)} ms  p99 ${pct(xs, 0.99).toFixed(1)} ms`

/** Resolves once `cond()` holds (polled), or rejects after `ms`. */
async function until(what: string, cond: () => boolean, ms = 120_000): Promise<void> {
  const by = Date.now() + ms
  while (!cond()) {
    if (Date.now() > by) throw new Error(`timed out waiting for ${what}`)
    await sleep(5)
  }
}

/** The raw POSTs, from a process of their own (webhook-posts.ts): how many per second. Not execFileSync: the receiver answers from this process's loop. */
async function rawRate(port: number, n: number, body: string): Promise<number> {
  const { stdout } = await promisify(execFile)(process.execPath, [
    '--import',
    'tsx',
    path.join(here, 'webhook-posts.ts'),
    String(port),
    String(n),
    String(IN_FLIGHT),
    body,
  ])
  return n / Number(stdout.trim().split('\n').pop())
}

export async function runWebhookBench(): Promise<void> {
  // The servers below are unref'd (as in tests): hold the process open while it waits on them.
  const hold = setInterval(() => undefined, 1000)
  const receiver = await startReceiver()
  const nats = await startNats()
  const dir = mkdtempSync(path.join(os.tmpdir(), 'troupe-bench-webhooks-'))
  const env = { TROUPE_VAULT_KEYRING_FILE: keyringFile([{ id: 'k1', key: newKey() }]), ...receiver.env, LOG_LEVEL: '' }
  const procs: TroupeProcess[] = []
  const start = async (role: 'serve' | 'orchestrate', name: string) => {
    const p = await startTroupe({ role, natsUrl: nats.url, stderrFile: path.join(dir, `${name}.log`), env })
    procs.push(p)
    return p
  }
  const nc = await connect({ servers: nats.url })
  try {
    const serve = await start('serve', 'serve')
    const endpoint = async (p: string, types: string[]) => {
      const r = await raw(serve.url, 'POST', '/v1/webhooks', { url: `https://hooks.example.test${p}`, event_types: types }, H)
      if (r.status !== 200) throw new Error(`endpoint create: ${r.status} ${r.text}`)
    }
    for (let i = 0; i < ENDPOINTS; i++) await endpoint(`/t${i}`, ['session.status_scheduled'])
    await endpoint('/updated', ['session.updated'])
    const js = jetstream(nc)
    const outbox = new Outbox(js)
    /** Per webhook-id, the endpoints that received it (each once), counted as requests come. */
    const seen = new Set<string>()
    const endpointsOf = new Map<string, number>()
    let counted = 0
    const allDelivered = (ids: string[]) => {
      for (; counted < receiver.got.length; counted++) {
        const r: Received = receiver.got[counted]!
        const id = r.headers['webhook-id'] ?? ''
        if (!r.path.startsWith('/t') || seen.has(`${r.path} ${id}`)) continue
        seen.add(`${r.path} ${id}`)
        endpointsOf.set(id, (endpointsOf.get(id) ?? 0) + 1)
      }
      return ids.every((id) => endpointsOf.get(id) === ENDPOINTS)
    }
    /** Publishes `n` outbox events (64 at a time), as a session's create does; their webhook-ids. */
    const publish = async (n: number) => {
      const sessions = Array.from({ length: n }, () => newId('sesn'))
      await pool(sessions, 64, (s) => outbox.publish('session.status_scheduled', s, Date.now()))
      return sessions.map((s) => webhookEventId('session.status_scheduled', s))
    }

    // The floor: raw POSTs of the same bytes, as many as the deliveries, IN_FLIGHT at a time.
    const body = eventOf('session.status_scheduled').body
    const raws = await rawRate(receiver.port, EVENTS * ENDPOINTS, body)

    const client = clientFor(serve.url, { maxRetries: 3 })
    const agent = await client.beta.agents.create({ name: 'bench', model: 'claude-sonnet-4-5' })
    const environment = await client.beta.environments.create({ name: 'bench' })
    const session = await client.beta.sessions.create({ agent: agent.id, environment_id: environment.id } as any)
    const updates = () => receiver.got.filter((r) => r.path === '/updated').length

    // The latency floor: one stored message, pulled by a durable consumer, then one POST; one after another.
    const jsm = await jetstreamManager(nc)
    await jsm.streams.add({ name: 'BENCH_RAW', subjects: ['bench.raw'] })
    await jsm.consumers.add('BENCH_RAW', { durable_name: 'raw', ack_policy: AckPolicy.Explicit })
    const rawConsumer = await js.consumers.get('BENCH_RAW', 'raw')
    const rawLatency: number[] = []
    for (let i = 0; i < CHANGES; i++) {
      const t = performance.now()
      await js.publish('bench.raw', new TextEncoder().encode(body))
      const m = await rawConsumer.next({ expires: 5000 })
      if (!m) throw new Error('raw consumer: nothing')
      await rawPost(receiver.port, new TextDecoder().decode(m.data))
      m.ack()
      rawLatency.push(performance.now() - t)
    }

    console.log(`\nwebhooks: ${EVENTS} events × ${ENDPOINTS} endpoints, ${CHANGES} title changes; receiver in this process, nats-server, troupe serve`)
    console.log(`  raw HTTPS POSTs (${IN_FLIGHT} in flight, new TLS each)  ${raws.toFixed(0)} POSTs/s`)
    console.log(`  raw JetStream publish + pull + HTTPS POST         ${fmt(rawLatency)}`)
    const orchestrators: TroupeProcess[] = []
    for (const n of [1, 2]) {
      orchestrators.push(await start('orchestrate', `orchestrate-${n}`))
      // Warm-up: one event through every endpoint, so consumers and connections are up before the clock starts.
      const warm = await publish(1)
      await until('the warm-up', () => allDelivered(warm))
      const t0 = performance.now()
      const ids = await publish(EVENTS)
      await until(`${EVENTS * ENDPOINTS} deliveries`, () => allDelivered(ids))
      const rate = (EVENTS * ENDPOINTS) / ((performance.now() - t0) / 1000)

      const latency: number[] = []
      for (let i = 0; i < CHANGES; i++) {
        const before = updates()
        const t = performance.now()
        await client.beta.sessions.update(session.id, { title: `t${n}-${i}` } as any)
        await until('a session.updated delivery', () => updates() > before, 30_000)
        latency.push(performance.now() - t)
      }
      const label = n === 1 ? 'one orchestrator' : 'two orchestrators'
      console.log(`  ${label.padEnd(18)} deliveries ${rate.toFixed(0).padStart(6)}/s = ${(rate / raws).toFixed(2)}× raw POSTs`)
      console.log(
        `  ${label.padEnd(18)} title change → session.updated delivered  ${fmt(latency)} = ${(pct(latency, 0.5) / pct(rawLatency, 0.5)).toFixed(1)}× raw (p50)`,
      )
    }
  } finally {
    for (const p of procs) p.killNow()
    await nc.close()
    await nats.stop()
    receiver.close()
    rmSync(dir, { recursive: true, force: true })
    clearInterval(hold)
  }
}
