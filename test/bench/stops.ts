// `npm run bench -- stops`: how long stopping and failing take, the figures tests used to assert with wall-clock
// limits (the tests now assert what happens; this says how fast):
//   Ctrl-C          `troupe start` from SIGINT to exit (the README's promise: within 3 s)
//   SIGTERM         one of two `troupe serve` hosts: to exit, and to the survivor holding every partition
//   turn handed     the owner of a session stopped (SIGTERM) during a model request: to the turn's idle elsewhere
//   wrong NATS_URL  connectNats explaining a refused port, a server that is not NATS, an unresolvable host
import { createServer } from 'node:http'
import { performance } from 'node:perf_hooks'
import { Kvm } from '@nats-io/kv'
import { connect } from '@nats-io/transport-node'
import { decode } from '../../protocol/codec.js'
import { Buckets, PARTITIONS, partitionOf, partitionToken } from '../../protocol/subjects.js'
import { connectNats } from '../../supervisor/nats-connect.js'
import { freePort } from '../../supervisor/nats-server.js'
import { startFakeModelServer } from '../fakes/model-server.js'
import { startNats } from '../helpers/nats.js'
import { clientFor, startTroupe, type TroupeProcess } from '../helpers/troupe.js'
import { until } from '../helpers/wait.js'

const RUNS = Number(process.env.BENCH_STOP_RUNS ?? 3)
const line = (label: string, xs: number[]) => console.log(`  ${label.padEnd(42)} ${xs.map((x) => `${x.toFixed(0)} ms`).join(' / ')}`)
/**
 * Resolves once the process is gone, polling: each poll keeps this process's loop alive (awaiting only the child's
 * 'exit' let the loop empty, and node ended the run with an unsettled await, exit code 13; see run.ts's stopServer).
 */
async function exited(p: TroupeProcess): Promise<void> {
  for (let i = 0; i < 3000 && p.proc.exitCode === null && p.proc.signalCode === null; i++) await new Promise((r) => setTimeout(r, 5))
}
const hostOf = (p: TroupeProcess) => /^\s+host\s+(host_\S+)/m.exec(p.stdout())?.[1]

async function ctrlC(): Promise<number> {
  const p = await startTroupe({ role: 'start', env: { NATS_URL: '', LOG_LEVEL: '' } })
  const t0 = performance.now()
  p.proc.kill('SIGINT')
  await exited(p)
  return performance.now() - t0
}

/** Two hosts on one nats-server; SIGTERM the first: [to its exit, to the second holding every partition]. */
async function sigterm(): Promise<[number, number]> {
  const nats = await startNats()
  const procs: TroupeProcess[] = []
  const nc = await connect({ servers: nats.url })
  try {
    const a = await startTroupe({ natsUrl: nats.url, env: { LOG_LEVEL: '' } })
    procs.push(a)
    const b = await startTroupe({ natsUrl: nats.url, env: { LOG_LEVEL: '' } })
    procs.push(b)
    const leases = await new Kvm(nc).open(Buckets.placement)
    const held = async (host: string) => {
      let n = 0
      for await (const k of await leases.keys()) {
        const e = await leases.get(k)
        if (e?.operation === 'PUT' && decode<{ host: string }>(e.value).host === host) n++
      }
      return n
    }
    await until('a share on each host', async () => (await held(hostOf(a)!)) > 0 && (await held(hostOf(b)!)) > 0, 30_000, 50)
    const t0 = performance.now()
    a.signal('SIGTERM')
    const gone = exited(a)
    let all = 0
    const allHeld = until(
      'the survivor holds every partition',
      async () => (await held(hostOf(b)!)) === 2 * PARTITIONS && (all = performance.now() - t0),
      30_000,
      10,
    )
    await gone
    const stopMs = performance.now() - t0
    await allHeld
    return [stopMs, all]
  } finally {
    for (const p of procs) p.killNow()
    await nc.close()
    await nats.stop()
  }
}

/** The owner of a session stopped during a model request: from the SIGTERM to the turn's idle on the other host. */
async function turnHandedOver(): Promise<number> {
  const model = await startFakeModelServer()
  const nats = await startNats()
  const env = { TROUPE_MODEL_BASE_URL: model.url, ANTHROPIC_API_KEY: 'k', LOG_LEVEL: '' }
  const procs: TroupeProcess[] = []
  const nc = await connect({ servers: nats.url })
  try {
    const a = await startTroupe({ natsUrl: nats.url, env })
    const b = await startTroupe({ natsUrl: nats.url, env })
    procs.push(a, b)
    const leases = await new Kvm(nc).open(Buckets.placement)
    const ownerOf = async (id: string) => {
      const e = await leases.get(`session.${partitionToken(partitionOf(id))}`)
      return e?.operation === 'PUT' ? decode<{ host: string }>(e.value).host : undefined
    }
    const client = clientFor(a.url, { maxRetries: 6 })
    const agent = await client.beta.agents.create({ name: 'bench', model: 'claude-sonnet-4-5' })
    const environment = await client.beta.environments.create({ name: 'bench' })
    // A session owned by b, watched and driven through a.
    let session: Awaited<ReturnType<typeof client.beta.sessions.create>>
    for (;;) {
      session = await client.beta.sessions.create({ agent: agent.id, environment_id: environment.id } as any)
      if ((await ownerOf(session.id)) === hostOf(b)) break
      await new Promise((r) => setTimeout(r, 50))
    }
    const before = model.requests.length
    model.enqueue({ hang: true }, { steps: [{ type: 'text', text: 'handed over' }] })
    const stream = await client.beta.sessions.events.stream(session.id)
    await client.beta.sessions.events.send(session.id, { events: [{ type: 'user.message', content: [{ type: 'text', text: 'go' }] }] } as any)
    await model.waitForRequests(before + 1)
    const t0 = performance.now()
    b.signal('SIGTERM')
    for await (const e of stream) if ((e as { type: string }).type === 'session.status_idle') break
    return performance.now() - t0
  } finally {
    for (const p of procs) p.killNow()
    await nc.close()
    await nats.stop()
    await model.close()
  }
}

async function connectFailure(url: string): Promise<number> {
  const t0 = performance.now()
  try {
    await (await connectNats(url)).close()
  } catch {
    return performance.now() - t0
  }
  throw new Error(`connected to ${url}`)
}

async function wrongUrls(): Promise<Array<[string, number[]]>> {
  const http = createServer((_, res) => res.end('hello'))
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r))
  try {
    const notNats = `nats://127.0.0.1:${(http.address() as { port: number }).port}`
    const cases: Array<[string, () => Promise<string>]> = [
      ['refused', async () => `nats://127.0.0.1:${await freePort()}`],
      ['not NATS (HTTP)', async () => notNats],
      ['unresolvable', async () => 'nats://no-such-host.invalid:4222'],
    ]
    const out: Array<[string, number[]]> = []
    for (const [name, url] of cases) {
      const runs: number[] = []
      for (let i = 0; i < RUNS; i++) runs.push(await connectFailure(await url()))
      out.push([name, runs])
    }
    return out
  } finally {
    http.closeAllConnections()
    http.close()
  }
}

export async function runStopBench(): Promise<void> {
  console.log(`\nstops and failures: ${RUNS} runs each`)
  const ctrl: number[] = []
  for (let i = 0; i < RUNS; i++) ctrl.push(await ctrlC())
  line('Ctrl-C, troupe start to exit', ctrl)
  const stop: number[] = []
  const takeover: number[] = []
  for (let i = 0; i < RUNS; i++) {
    const [s, all] = await sigterm()
    stop.push(s)
    takeover.push(all)
  }
  line('SIGTERM of one of two hosts, to exit', stop)
  line('  to the survivor holding every partition', takeover)
  const handed: number[] = []
  for (let i = 0; i < RUNS; i++) handed.push(await turnHandedOver())
  line("a turn's owner stopped, to idle elsewhere", handed)
  for (const [name, runs] of await wrongUrls()) line(`wrong NATS_URL explained: ${name}`, runs)
}
