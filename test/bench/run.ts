// `npm run bench`: GET /v1/agents/{id} and POST /v1/agents through the whole stack (a real `troupe serve`
// on a real nats-server), once over each HTTP transport (TROUPE_HTTP=uws, the default, and node), and the same load
// against raw uWebSockets.js + raw NATS request/reply in the same run, printed side by side as figures and ratios.
// Targets (for the default transport): GET ≥ 60 %, POST ≥ 25 % of the baseline.
// Then the session benchmarks (sessions.ts). Arguments pick what runs: `agents`, `sessions`, or one session
// benchmark (`sessions.turn`, `sessions.streams`, `sessions.idle`, `sessions.calls`, `sessions.events`), or `bodies` (the
// event loop while large bodies arrive, test/bench/big-bodies.ts); none runs everything.
import { runBodyBench } from './big-bodies.js'
import { startNats, type TestNats } from '../helpers/nats.js'
import { clientFor, startTroupe } from '../helpers/troupe.js'
import type { TransportName } from '../../gateway/transport.js'
import { load as runLoad, sleep, startBaseline, type LoadResult } from './bed.js'
import { runSessionBenches, SESSION_BENCHES, type SessionBench } from './sessions.js'

const DURATION = Number(process.env.BENCH_MS ?? 5000)
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32)
const TRANSPORTS: readonly TransportName[] = ['uws', 'node']

const load = (url: string, method: string, body?: string) => runLoad(url, method, body, DURATION, CONNECTIONS)
const createBody = JSON.stringify({ name: 'bench', model: 'claude-sonnet-4-5', system: 'You are a benchmark.' })

/** Waits until the server says it is ready (a host that just started takes its partitions first). */
async function ready(url: string): Promise<void> {
  const deadline = Date.now() + 30_000
  while (
    (await fetch(`${url}/readyz`).then(
      (r) => r.status,
      () => 0,
    )) !== 200
  ) {
    if (Date.now() > deadline) throw new Error(`${url} did not become ready`)
    await sleep(100)
  }
}

/** One `troupe serve` over `transport`, measured alone on the shared nats-server, then stopped. */
async function measure(nats: TestNats, transport: TransportName): Promise<{ get: LoadResult; post: LoadResult }> {
  const troupe = await startTroupe({ natsUrl: nats.url, env: { LOG_LEVEL: 'warn', TROUPE_HTTP: transport } })
  try {
    await ready(troupe.url)
    const agent = await clientFor(troupe.url).beta.agents.create({ name: 'bench', model: 'claude-sonnet-4-5' })
    // Warm (JIT, connections, caches), then measure.
    load(`${troupe.url}/v1/agents/${agent.id}`, 'GET')
    return { get: load(`${troupe.url}/v1/agents/${agent.id}`, 'GET'), post: load(`${troupe.url}/v1/agents`, 'POST', createBody) }
  } finally {
    await troupe.stop()
  }
}

async function agentBenches(): Promise<void> {
  const nats = await startNats()
  const baseline = await startBaseline(nats.url)
  try {
    load(`${baseline.url}/get`, 'GET')
    const base = { get: load(`${baseline.url}/get`, 'GET'), post: load(`${baseline.url}/put`, 'POST', createBody) }
    const troupe = {} as Record<TransportName, { get: LoadResult; post: LoadResult }>
    for (const transport of TRANSPORTS) troupe[transport] = await measure(nats, transport)
    const rows = [
      ['GET /v1/agents/{id}', 'get', 0.6],
      ['POST /v1/agents', 'post', 0.25],
    ] as const
    const cell = (r: LoadResult) => `${r.rps.toFixed(0).padStart(8)} ${r.p99.toFixed(2).padStart(7)}`
    const ratio = (r: LoadResult, b: LoadResult) => `${((r.rps / b.rps) * 100).toFixed(0).padStart(4)} %`
    console.log(`\n${CONNECTIONS} connections, ${DURATION} ms per run, loopback, nats-server ${nats.url}`)
    console.log('route                 |   uws rps  p99 ms |  node rps  p99 ms | baseline rps  p99 ms |    uws   node  target (uws)')
    for (const [name, key, target] of rows) {
      const u = troupe.uws[key]
      const n = troupe.node[key]
      const b = base[key]
      const errors = u.errors + n.errors + b.errors
      console.log(
        `${name.padEnd(21)} | ${cell(u)} | ${cell(n)} | ${cell(b).padStart(20)} | ${ratio(u, b)} ${ratio(n, b)}  ≥ ${target * 100} % ${u.rps / b.rps >= target ? 'ok' : 'MISSED'}` +
          (errors ? `  (errors: uws ${u.errors}, node ${n.errors}, baseline ${b.errors})` : ''),
      )
    }
  } finally {
    baseline.stop()
    nats.stopNow()
  }
}

const args = process.argv.slice(2)
const known = ['agents', 'sessions', 'bodies', ...SESSION_BENCHES.map((b) => `sessions.${b}`)]
const unknown = args.filter((a) => !known.includes(a))
if (unknown.length) {
  console.error(`unknown benchmark ${unknown.join(', ')}; pick from ${known.join(', ')} (none: all)`)
  process.exit(2)
}
const sessionArgs = args.filter((a) => a.startsWith('sessions.')).map((a) => a.slice('sessions.'.length) as SessionBench)
if (!args.length || args.includes('agents')) await agentBenches()
if (!args.length || args.includes('sessions')) await runSessionBenches()
else if (sessionArgs.length) await runSessionBenches(sessionArgs)
if (!args.length || args.includes('bodies')) await runBodyBench()
