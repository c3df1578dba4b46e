// `npm run bench`: GET /v1/agents/{id} and POST /v1/agents through the whole stack, the server run exactly as
// `npm start` runs it (`troupe start`: its embedded nats-server, the default log level), once over each HTTP transport
// (TROUPE_HTTP=uws, the default, and node), beside the raw hop in the same run: raw uWebSockets.js answering each
// request with one raw NATS request/reply on the same nats-server (plus a raw KV put for POST). Then two hosts (a
// `troupe serve` joined to the first one's NATS): the calls that cross NATS to the other host's agents, and the
// ones served where they arrive. Ratios are of the raw GET hop, medians of per-round ratios (the machine is shared).
// Then the session benchmarks (sessions.ts). Arguments pick what runs: `agents`, `sessions`, or one session
// benchmark (`sessions.turn`, `sessions.streams`, `sessions.idle`, `sessions.calls`, `sessions.events`), or `bodies` (the
// event loop while large bodies arrive, test/bench/big-bodies.ts), or `stops` (stopping and failing: stops.ts), or
// `deployments` (10,000 deployments every minute on one orchestrator, then two: deployments.ts), `sandbox` (sandbox
// start-up and tool round trips, local vs isolated: sandbox.ts), or `hardening` (a tool call with the seccomp filter
// and the disk quota on vs off: hardening.ts), or `files` (upload and download of 100 MB against a
// raw object store put and get: files.ts), or `workspace` (a session's workspace saved after a tool call and restored on
// another host: workspace.ts), or `skill-mounts` (a 25 MB skill bundle unpacked into a session's directory: skill-mounts.ts), or `webhooks` (deliveries per second and change-to-delivery latency, one orchestrator
// then two, against raw HTTPS POSTs and a raw JetStream hop: webhooks.ts), or `skills` (a 25 MB, 1,000-file skill
// bundle: `skills.pool` validates it on the pool in-process, skill-bundle.ts; `skills.server` uploads it to the server
// while GETs run, skill-server.ts; `skills` both), or `work` (the self-hosted work queue: claims, queue-to-claim, CPU of
// idle pollers: work.ts), or `memory` (10,000 memories in one store: creates per second, listings by folder, against raw
// KV: memory.ts), or `mcp` (an MCP tool round trip through a session against a direct SDK call: mcp.ts), or `keys` (the API key check's
// cost on GET and POST, keys on vs TROUPE_AUTH=off, then `keys.bound`, the rate limiter's error bound with 3 hosts:
// keys.ts), or `metrics` (GET and turn with Prometheus metrics on vs TROUPE_METRICS=off: metrics.ts), or `scale-model`
// (a model of 100 hosts and 10 M sessions: placement planned with the real plan(), traffic and memory from rates
// measured in the run: scale-model.ts); none runs everything.
// BENCH_PROFILE_DIR=<dir> has the session benchmarks' servers write a CPU profile there (node --cpu-prof) when they stop.
import { Kvm } from '@nats-io/kv'
import { connect } from '@nats-io/transport-node'
import { decode } from '../../protocol/codec.js'
import { Buckets, partitionOf, partitionToken } from '../../protocol/subjects.js'
import { runBodyBench } from './big-bodies.js'
import { runFileBench } from './files.js'
import { runStopBench } from './stops.js'
import { runDeploymentBench } from './deployments.js'
import { runSandboxBench } from './sandbox.js'
import { runHardeningBench } from './hardening.js'
import { runWebhookBench } from './webhooks.js'
import { runWorkspaceBench } from './workspace.js'
import { runWorkBench } from './work.js'
import { runMemoryBench } from './memory.js'
import { runThreadBench } from './threads.js'
import { runMcpBench } from './mcp.js'
import { runScaleModelBench } from './scale-model.js'
import { runKeysBench, runKeysBoundBench } from './keys.js'
import { runMetricsBench } from './metrics.js'
import { clientFor, startTroupe, type TroupeProcess } from '../helpers/troupe.js'
import type { TransportName } from '../../gateway/transport.js'
import { load as runLoad, ready, sleep, startAsNpmStart, stopServer, startBaseline, type LoadResult } from './bed.js'
import { runSessionBenches, SESSION_BENCHES, type SessionBench } from './sessions.js'
import { runSkillBundleBench } from './skill-bundle.js'
import { runSkillMountBench } from './skill-mounts.js'
import { runSkillServerBench } from './skill-server.js'

const DURATION = Number(process.env.BENCH_MS ?? 5000)
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const TRANSPORTS: readonly TransportName[] = ['uws', 'node']

const load = (url: string, method: string, body?: string, ids?: string[]) => runLoad(url, method, body, DURATION, CONNECTIONS, ids)
const createBody = JSON.stringify({ name: 'bench', model: 'claude-sonnet-4-5', system: 'You are a benchmark.' })
const updateBody = JSON.stringify({ metadata: { n: '__N__' } })
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!

/** Runs of one call, one per round, and their ratio to the raw hop of the same round. */
interface Row {
  name: string
  runs: LoadResult[]
  target?: number
}

function print(title: string, rows: Row[], hop: Row): void {
  console.log(`\n${title}: ${CONNECTIONS} connections, ${DURATION} ms per run, median of ${ROUNDS} rounds (each round's req/s in brackets)`)
  for (const r of rows) {
    const rps = median(r.runs.map((x) => x.rps))
    const p99 = median(r.runs.map((x) => x.p99))
    const ratio = median(r.runs.map((x, i) => x.rps / hop.runs[i]!.rps))
    const errors = r.runs.reduce((n, x) => n + x.errors, 0)
    const verdict = r.target === undefined ? '' : `  target ≥ ${r.target}× ${ratio >= r.target ? 'ok' : 'MISSED'}`
    console.log(
      `  ${r.name.padEnd(34)} ${rps.toFixed(0).padStart(6)} req/s  p99 ${p99.toFixed(2).padStart(6)} ms  ${ratio.toFixed(2)}× of the hop${verdict}` +
        `  (${r.runs.map((x) => x.rps.toFixed(0)).join(' / ')})${errors ? `  ${errors} errors` : ''}`,
    )
  }
}

/** Runs each row's call once per round, the raw hop first in each round. */
function measureRounds(calls: Array<[Row, () => LoadResult]>): void {
  for (let i = 0; i < ROUNDS; i++) for (const [row, call] of calls) row.runs.push(call())
}

/** One `troupe start` over `transport`, with the raw hop on its own nats-server. */
async function singleHost(transport: TransportName): Promise<void> {
  const { troupe, natsUrl } = await startAsNpmStart({ TROUPE_HTTP: transport })
  const baseline = await startBaseline(natsUrl)
  try {
    await ready(troupe.url)
    const agent = await clientFor(troupe.url).beta.agents.create({ name: 'bench', model: 'claude-sonnet-4-5' })
    // Warm (JIT, connections, caches), then measure.
    load(`${troupe.url}/v1/agents/${agent.id}`, 'GET')
    load(`${baseline.url}/get`, 'GET')
    const hop: Row = { name: 'raw hop (uWS + NATS req/reply)', runs: [] }
    const rows: Row[] = [
      hop,
      { name: 'raw POST (hop + KV put)', runs: [] },
      { name: 'GET /v1/agents/{id}', runs: [], target: 1.0 },
      { name: 'POST /v1/agents', runs: [], target: 0.45 },
    ]
    measureRounds([
      [rows[0]!, () => load(`${baseline.url}/get`, 'GET')],
      [rows[1]!, () => load(`${baseline.url}/put`, 'POST', createBody)],
      [rows[2]!, () => load(`${troupe.url}/v1/agents/${agent.id}`, 'GET')],
      [rows[3]!, () => load(`${troupe.url}/v1/agents`, 'POST', createBody)],
    ])
    print(`agents, one host (troupe start, TROUPE_HTTP=${transport})`, rows, hop)
  } finally {
    baseline.stop()
    await stopServer(troupe)
  }
}

/** The host id a `troupe start|serve` printed in its start-up block. */
const hostIdOf = (t: TroupeProcess) => /^\s+host\s+(host_\S+)/m.exec(t.stdout())?.[1]

/**
 * Agents created through `url` until there are `n` whose partition `hostId` holds and `n` it does not: the updates
 * spread over them (one agent per connection), since concurrent updates of one agent contend for its head and are
 * refused (503 `contention`), which measured the refusals rather than the path.
 */
async function agentsOnEachSide(url: string, natsUrl: string, hostId: string, n: number): Promise<{ there: string[]; here: string[] }> {
  const nc = await connect({ servers: natsUrl })
  try {
    const placement = await new Kvm(nc).open(Buckets.placement)
    const client = clientFor(url)
    const there: string[] = []
    const here: string[] = []
    for (let i = 0; i < 20 * n && (there.length < n || here.length < n); i++) {
      const { id } = await client.beta.agents.create({ name: `bench-${i}`, model: 'claude-sonnet-4-5' })
      const rec = await placement.get(`agent.${partitionToken(partitionOf(id))}`)
      const holder = rec?.value.length ? decode<{ host: string }>(rec.value).host : undefined
      const side = holder === hostId ? there : here
      if (side.length < n) side.push(id)
    }
    if (there.length < n || here.length < n) throw new Error('could not find agents on both hosts')
    return { there, here }
  } finally {
    await nc.close()
  }
}

/** Two hosts: calls through the first host for agents the second one owns (they cross NATS), and for its own. */
async function twoHosts(): Promise<void> {
  const { troupe: a, natsUrl } = await startAsNpmStart()
  const baseline = await startBaseline(natsUrl)
  let b: TroupeProcess | undefined
  try {
    b = await startTroupe({ role: 'serve', natsUrl, stderrFile: '/dev/null', env: { LOG_LEVEL: '' } })
    await ready(a.url)
    await ready(b.url)
    // Both hosts hold their share of the partitions once the second one has joined.
    await sleep(2000)
    const sides = await agentsOnEachSide(a.url, natsUrl, hostIdOf(b)!, CONNECTIONS)
    const [there, here] = [sides.there[0]!, sides.here[0]!]
    load(`${a.url}/v1/agents/${there}`, 'GET')
    load(`${baseline.url}/get`, 'GET')
    const hop: Row = { name: 'raw hop (uWS + NATS req/reply)', runs: [] }
    const rows: Row[] = [
      hop,
      { name: 'GET agent, owner on the other host', runs: [], target: 0.6 },
      { name: 'POST agent update, owner elsewhere', runs: [], target: 0.3 },
      { name: 'GET agent, owner here', runs: [] },
      { name: 'POST agent update, owner here', runs: [] },
    ]
    measureRounds([
      [rows[0]!, () => load(`${baseline.url}/get`, 'GET')],
      [rows[1]!, () => load(`${a.url}/v1/agents/${there}`, 'GET')],
      [rows[2]!, () => load(`${a.url}/v1/agents/__ID__`, 'POST', updateBody, sides.there)],
      [rows[3]!, () => load(`${a.url}/v1/agents/${here}`, 'GET')],
      [rows[4]!, () => load(`${a.url}/v1/agents/__ID__`, 'POST', updateBody, sides.here)],
    ])
    print('agents, two hosts (troupe start + troupe serve, uws), every call through the first', rows, hop)
  } finally {
    baseline.stop()
    if (b) await stopServer(b)
    await stopServer(a)
  }
}

async function agentBenches(): Promise<void> {
  for (const transport of TRANSPORTS) await singleHost(transport)
  await twoHosts()
}

const args = process.argv.slice(2)
const known = [
  'agents',
  'sessions',
  'bodies',
  'stops',
  'deployments',
  'sandbox',
  'hardening',
  'files',
  'workspace',
  'skills',
  'skills.pool',
  'skills.server',
  'skill-mounts',
  'webhooks',
  'work',
  'threads',
  'memory',
  'mcp',
  'scale-model',
  'keys',
  'keys.bound',
  'metrics',
  ...SESSION_BENCHES.map((b) => `sessions.${b}`),
]
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
if (!args.length || args.includes('stops')) await runStopBench()
if (!args.length || args.includes('deployments')) await runDeploymentBench()
if (!args.length || args.includes('sandbox')) await runSandboxBench()
if (!args.length || args.includes('hardening')) await runHardeningBench()
if (!args.length || args.includes('files')) await runFileBench()
if (!args.length || args.includes('workspace')) await runWorkspaceBench()
if (!args.length || args.includes('skills') || args.includes('skills.pool')) await runSkillBundleBench()
if (!args.length || args.includes('skills') || args.includes('skills.server')) await runSkillServerBench()
if (!args.length || args.includes('skill-mounts')) await runSkillMountBench()
if (!args.length || args.includes('webhooks')) await runWebhookBench()
if (!args.length || args.includes('work')) await runWorkBench()
if (!args.length || args.includes('threads')) await runThreadBench()
if (!args.length || args.includes('memory')) await runMemoryBench()
if (!args.length || args.includes('mcp')) await runMcpBench()
if (!args.length || args.includes('scale-model')) await runScaleModelBench()
if (!args.length || args.includes('keys')) await runKeysBench()
if (!args.length || args.includes('keys') || args.includes('keys.bound')) await runKeysBoundBench()
if (!args.length || args.includes('metrics')) await runMetricsBench()
// A profiled server writes its profile as it stops: give the SIGTERMed servers the time before this process leaves.
if (process.env.BENCH_PROFILE_DIR) await new Promise((r) => setTimeout(r, 5000))
