// `npm run chaos -- --seed N --seconds S [--sessions N] [--hosts N] [--readers N] [--no-faults | --faults …]
// [--sandbox-hosts N] [--workers N]`: a 3-node NATS JetStream cluster, N `troupe serve` hosts (and sandbox hosts) and the fake model, sessions doing turns through the
// official client while seeded faults hit hosts and NATS servers one at a time; then checks of what was stored,
// streamed and executed, printed as a report. Exit status 1 when a check fails, 2 when the run itself broke.
import { execFileSync, spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import Anthropic from '@anthropic-ai/sdk'
import { connect } from '@nats-io/transport-node'
import { startNatsCluster } from '../helpers/nats-cluster.js'
import { parseArgs } from './args.js'
import { Balancer, CLIENT_HEADER, VIRTUAL_ORIGIN } from './balancer.js'
import { runChecks, scheduleOccurrences, UPLOAD_CHECK_CLIENT, type RunData } from './checks.js'
import { cleanupNow, installCleanupHandlers, onBrokenRun, onCleanup } from './cleanup.js'
import { FaultRunner, planFaults } from './faults.js'
import { readHistories, readTags } from './history.js'
import { Hosts } from './hosts.js'
import { KillChecks } from './kill-checks.js'
import { MEMORY_CLIENT, MemoryChurn } from './memories.js'
import { MCP_CLIENT, McpChurn } from './mcp.js'
import { Load, tagFile } from './load.js'
import { placementReader, waitBalanced } from './placement.js'
import { printReport } from './report.js'
import { SseReader } from './sse.js'
import { Rng } from './rng.js'
import { SandboxKillChecks } from './sandbox-kills.js'
import { Schedules } from './schedules.js'
import { oneTurn, type TurnOutcome } from './turn.js'
import { SKILL_SWEEP_ENV, SKILLS_CLIENT, SkillChurn } from './skills.js'
import { THREADS_CLIENT, ThreadChurn } from './threads.js'
import { UploadProbes } from './uploads.js'
import { WORKERS_CLIENT, WorkerFleet } from './workers.js'
import { Webhooks } from './webhooks.js'
import { WorkspaceProbes } from './workspaces.js'

const here = path.dirname(fileURLToPath(import.meta.url))
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
/** Sessions must be idle this long after the load ends, or they count as stuck. */
const SETTLE_MS = 30_000
/** Past the load, setup and teardown together never take longer than this: the run gives up and cleans up. */
const OVERRUN_MS = 9 * 60_000
/** Deployments fired every minute of the schedule clock (12 real seconds). */
const DEPLOYMENTS = 5
/** Sessions apart from the load whose workspaces are read back after each host SIGKILL (about three per host). */
const PROBE_SESSIONS = 9
/** Where a session's bash runs append `<tag> <tool use id>` inside an isolated sandbox: its /tmp, on each host's disk. */
const SANDBOX_EXEC_LOG = '/tmp/chaos-tags.log'

const args = (() => {
  try {
    return parseArgs(process.argv.slice(2))
  } catch (err) {
    console.error(`chaos: ${(err as Error).message}`)
    process.exit(2)
  }
})()
installCleanupHandlers()
// Hosts run compiled, as an installed Troupe does (bin/troupe.mjs falls back to compiling every module through tsx
// when dist/ is older than the sources, which under this much load makes a restart take 15 s instead of 2).
execFileSync(process.execPath, [path.join(here, '../../bin/build.mjs')], { stdio: 'inherit' })
const runDir = mkdtempSync(path.join(os.tmpdir(), 'troupe-chaos-'))
const tagDir = path.join(runDir, 'tags')
mkdirSync(tagDir)
const began = Date.now()
let loadStart: number | undefined
const say = (line: string) => {
  const t = loadStart === undefined ? `setup ${((Date.now() - began) / 1000).toFixed(1)} s` : `${((Date.now() - loadStart) / 1000).toFixed(1)} s`
  console.log(`[${t.padStart(12)}] ${line}`)
}
const overrun = setTimeout(
  () => {
    console.error(`chaos: the run overran ${args.seconds} s + ${OVERRUN_MS / 1000} s; stopping everything (logs in ${runDir})`)
    cleanupNow(true)
    process.exit(2)
  },
  args.seconds * 1000 + OVERRUN_MS,
)
overrun.unref()

async function startModel(): Promise<string> {
  const proc = spawn(process.execPath, ['--import', 'tsx', path.join(here, 'model.ts')], { stdio: ['ignore', 'pipe', 'inherit'] })
  onCleanup(() => proc.kill('SIGKILL'))
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the fake model did not start within 30 s')), 30_000)
    let buf = ''
    proc.stdout!.on('data', (d) => {
      buf += d
      const m = /fake model on (\S+)/.exec(buf)
      if (m) {
        clearTimeout(timer)
        resolve(m[1]!)
      }
    })
    proc.once('exit', (code) => reject(new Error(`the fake model exited (${code})`)))
  })
}

say(`run directory ${runDir}; sandboxes ${args.sandbox}${args.sandboxHosts ? ` on ${args.sandboxHosts} sandbox host(s)` : ''}`)
const modelUrl = await startModel()
say(`fake model on ${modelUrl}`)
const cluster = await startNatsCluster({ name: 'troupe-chaos', dir: path.join(runDir, 'nats') })
onCleanup(() => cluster.stopNow())
say(`NATS cluster ${cluster.url}, meta leader ${await cluster.metaLeader()}`)

// Webhooks: the receiver runs here; every process gets the keyring, each orchestrator a receiver port of its own.
const webhooks = args.webhooks ? await Webhooks.start() : undefined
const schedules = new Schedules(cluster.url, path.join(runDir, 'orchestrators'), (i) => webhooks?.orchestratorEnv(i) ?? {})
const natsMonitors = () => cluster.nodes.filter((n) => n.state() === 'running').map((n) => n.monitorUrl)
// With sandbox hosts the serve hosts run no sandbox: each session's runs on the sandbox host it is bound to.
const sandboxHosts = new Hosts({
  role: 'sandbox',
  env: { TROUPE_SANDBOX: args.sandbox },
  count: args.sandboxHosts,
  natsUrl: cluster.url,
  natsMonitors,
  dir: path.join(runDir, 'sandbox-hosts'),
})
const hosts = new Hosts({
  env: {
    TROUPE_SCHEDULE_CLOCK: schedules.clockSpec,
    ...webhooks?.hostEnv,
    ...SKILL_SWEEP_ENV,
    ...(args.mcp ? McpChurn.hostEnv : {}),
    ...(args.sandboxHosts ? { TROUPE_SANDBOX_PLACEMENT: 'remote' } : { TROUPE_SANDBOX: args.sandbox }),
  },
  count: args.hosts,
  natsUrl: cluster.url,
  natsMonitors,
  modelUrl,
  dir: path.join(runDir, 'hosts'),
})
const logDir = path.join(runDir, 'logs')
const saveLogs = () => {
  hosts.writeLogs(logDir)
  sandboxHosts.writeLogs(logDir)
  for (const n of cluster.nodes) writeFileSync(path.join(logDir, `${n.name}.log`), n.log())
}
onBrokenRun(() => {
  saveLogs()
  console.error(`chaos: the run broke; logs in ${logDir}`)
})
// All at the same moment, on the cluster that has just elected its meta leader, as a compose file or a rollout starts
// them (issue 40): every start-up step waits out the forming cluster, and none may exit. No session runs before the
// partitions are balanced below, so a session's first tool still finds a sandbox host heard.
await Promise.all([
  ...sandboxHosts.all.map(async (h) => {
    const rec = await sandboxHosts.start(h, false)
    if (rec.error) throw new Error(`${h.name} did not start: ${rec.error}`)
    say(`sandbox host ${h.name} ${h.id}, ready ${rec.readyAt! - rec.spawnAt} ms after spawn`)
  }),
  ...hosts.all.map(async (h) => {
    const rec = await hosts.start(h, false)
    if (rec.error) throw new Error(`${h.name} did not start: ${rec.error}`)
    say(`${h.name} ${h.id} on ${h.url}, ready ${rec.readyAt! - rec.spawnAt} ms after spawn`)
  }),
])

const balancer = new Balancer(hosts.all)
balancer.start()
onCleanup(() => balancer.stop())
const clientWith = (name: string, maxRetries: number, timeout: number) =>
  new Anthropic({ baseURL: VIRTUAL_ORIGIN, apiKey: 'chaos', maxRetries, timeout, fetch: balancer.fetch, defaultHeaders: { [CLIENT_HEADER]: name } })
// The driver's calls retry as a patient client would; probes make one short attempt each; a host SIGKILL's write
// per session retries as the official client does by itself, for as long as the probes last; reads after the run persist.
const driverClient = clientWith('driver', 5, 10_000)
const probeClient = clientWith('probe', 0, 2_000)
const writeClient = clientWith('failover', 20, 10_000)
const checkClient = clientWith('check', 8, 30_000)

const nc = await connect({ servers: cluster.nodes.map((n) => n.url), maxReconnectAttempts: -1, reconnectTimeWait: 250, name: 'chaos-driver' })
onCleanup(() => void nc.close().catch(() => undefined))

const balanced = await waitBalanced(
  nc,
  hosts.all.map((h) => h.id!),
)
say(balanced ? 'partitions balanced over the hosts' : 'partitions still moving after 60 s; starting anyway')

// Before any session: every event of the run is theirs.
if (webhooks) {
  await webhooks.create(balancer)
  say(`webhook endpoints ${webhooks.endpoints.map((e) => e.path).join(', ')}`)
}
const skills = new SkillChurn(clientWith(SKILLS_CLIENT, 5, 10_000))
await skills.start()
const threads = new ThreadChurn(clientWith(THREADS_CLIENT, 5, 10_000))
const agent = await driverClient.beta.agents.create({
  name: 'chaos',
  model: 'claude-sonnet-4-5',
  tools: [{ type: 'agent_toolset_20260401' }, { type: 'custom', name: 'lookup', description: 'look something up', input_schema: { type: 'object' } }],
} as any)
const environment = await driverClient.beta.environments.create({ name: 'chaos' })
const sessions: string[] = []
for (let i = 0; i < args.sessions; i++) {
  const s = await driverClient.beta.sessions.create({ agent: agent.id, environment_id: environment.id } as any)
  sessions.push(s.id)
}
say(`${sessions.length} sessions created`)
await threads.start(environment.id, `t${args.seed}`)
// Memory mounts need the isolated sandbox (on the local backend a session naming a store is refused 422).
const memories =
  args.memories && args.sandbox === 'isolated' ? new MemoryChurn(clientWith(MEMORY_CLIENT, 5, 10_000), clientWith(MEMORY_CLIENT, 0, 10_000)) : undefined
await memories?.start(agent.id, environment.id, `m${args.seed}-${Date.now().toString(36)}`, args.seed)
say(
  memories
    ? `2 memory stores, ${memories.sessionIds.length} sessions mounting both read_write`
    : args.memories
      ? 'no memory stores: sessions mount them only in the isolated sandbox'
      : 'no memory stores (--no-memories)',
)
const mcp = args.mcp ? new McpChurn(clientWith(MCP_CLIENT, 5, 10_000)) : undefined
await mcp?.start(environment.id, `p${args.seed}-${Date.now().toString(36)}`)
if (mcp) say(`${mcp.sessionIds.length} MCP sessions calling a local MCP server`)
const workers = args.workers
  ? new WorkerFleet(clientWith(WORKERS_CLIENT, 5, 10_000), {
      count: args.workers,
      sessions: args.sessions,
      seed: args.seed,
      dir: path.join(runDir, 'workers'),
      hosts: hosts.all,
    })
  : undefined
await workers?.start(`w${args.seed}`)
if (workers) say(`${args.workers} workers on self-hosted sessions`)
await Promise.all([schedules.start(0), schedules.start(1)])
await schedules.deploy(driverClient, agent.id, environment.id, DEPLOYMENTS)
say(`${DEPLOYMENTS} deployments every minute of a clock 10 times as fast, fired by 2 orchestrators`)

const runId = `c${args.seed}-${Date.now().toString(36)}`
const probes = new WorkspaceProbes(checkClient, placementReader(nc))
say(`${await probes.setup(agent.id, environment.id, PROBE_SESSIONS, runId)} of ${PROBE_SESSIONS} probe sessions left a token in their workspace`)
const kills = new KillChecks(probes, new UploadProbes(runId), clientWith(UPLOAD_CHECK_CLIENT, 8, 30_000))
const sandboxKills = new SandboxKillChecks(probes, checkClient)

const readers = sessions.slice(0, args.readers).map((s, i) => new SseReader(s, balancer, i))
for (const r of readers) r.start()
await Promise.all(readers.map((r) => Promise.race([r.opened, sleep(15_000)])))
for (const r of readers) r.rec.fromStart = r.rec.connects > 0
say(`${readers.filter((r) => r.rec.fromStart).length} of ${readers.length} SSE readers open`)

// An isolated sandbox sees none of this run's directory: its bash runs log to its own /tmp, read from the disk of each
// host that may have run it (the sandbox hosts, when there are some).
const execLog = (s: string) => (args.sandbox === 'isolated' ? SANDBOX_EXEC_LOG : tagFile(tagDir, s))
const sandboxDisks = (args.sandboxHosts ? sandboxHosts : hosts).all.map((h) => h.dataDir)
const execLogs = (s: string) =>
  args.sandbox === 'isolated' ? sandboxDisks.map((d) => path.join(d, 'sessions', s, 'tmp', path.basename(SANDBOX_EXEC_LOG))) : [tagFile(tagDir, s)]
const load = new Load({ client: driverClient, sessions, seed: args.seed, execLog, runId })
const faults = new FaultRunner({
  cluster,
  hosts,
  probeClient,
  writeClient,
  sessions,
  ownerOf: placementReader(nc),
  kills,
  sandboxHosts,
  sandboxKills,
  balanced: () =>
    waitBalanced(
      nc,
      hosts.all.filter((h) => h.state === 'up').map((h) => h.id!),
      30_000,
    ),
  say,
})
loadStart = Date.now()
const endAt = loadStart + args.seconds * 1000
say(`load starts: ${args.seconds} s${args.faults.length ? `, faults from ${args.faults.join(',')}` : ', no faults'}`)
const stopLoad = setTimeout(() => {
  load.stop()
  say('load stops: drivers finish the turn they are in')
}, args.seconds * 1000)
const ticker = setInterval(() => {
  const done = load.turns.filter((t) => t.outcome === 'done').length
  const n503 = balancer.attempts.filter((a) => a.status === 503).length
  say(`${done} turns done, ${load.posts.length} POSTs, ${balancer.attempts.length} attempts (${n503} × 503)`)
}, 15_000)
await Promise.all([
  load.run(),
  faults.run(planFaults(args.seed, args.faults), endAt),
  schedules.run(
    endAt,
    new Rng(args.seed ^ 0x5c4ed),
    say,
    webhooks && { beforeKill: (running) => webhooks.beforeKill(running), afterKill: () => webhooks.afterKill() },
  ),
  webhooks?.run(loadStart, args.seconds, say),
  skills.run(endAt),
  memories?.run(endAt),
  mcp?.run(endAt),
  threads.run(endAt),
  workers?.run(endAt, say),
])
clearTimeout(stopLoad)
clearInterval(ticker)
load.stop()
const loadEnd = Date.now()
const endClock = schedules.clock()
say(`orchestrator 1 SIGKILLed ${schedules.kills} times during the load`)
say('load and faults over; waiting for sessions to settle')

const settled = new Map<string, string>()
const settleEnd = Date.now() + SETTLE_MS
for (;;) {
  await Promise.all(
    sessions.map(async (s) => {
      const got = await checkClient.beta.sessions
        .retrieve(s, {}, { timeout: 5_000, maxRetries: 1 })
        .catch((err: Error) => ({ status: `unreachable (${err.message})` }))
      settled.set(s, got.status)
    }),
  )
  if ([...settled.values()].every((st) => st === 'idle') || Date.now() > settleEnd) break
  await sleep(1000)
}
say(`settled: ${[...settled.values()].filter((s) => s === 'idle').length} of ${sessions.length} idle`)

const histories = await readHistories(checkClient, sessions)
// Readers get a moment to catch up with the end of their history before they are stopped.
const caughtUpBy = Date.now() + 10_000
const lastStored = (s: string) => {
  const h = histories.get(s)
  return h && 'events' in h ? h.events.at(-1)?.id : undefined
}
while (Date.now() < caughtUpBy && readers.some((r) => r.lastId !== lastStored(r.session))) await sleep(250)
await Promise.all(readers.map((r) => r.stop()))
// Every session's workspace must still hold the tag of each bash run that answered ok, wherever the session moved.
const workspaceTags = new Map<string, TurnOutcome>()
{
  const queue = [...sessions]
  await Promise.all(
    Array.from({ length: 6 }, async () => {
      for (let s = queue.shift(); s; s = queue.shift()) workspaceTags.set(s, await oneTurn(checkClient, s, 'check-tags', 60_000))
    }),
  )
}
say(`workspaces read back: ${[...workspaceTags.values()].filter((o) => 'events' in o).length} of ${sessions.length}`)
const skillData = await skills.settle(nc, checkClient, say)
const memoryData = await memories?.settle(checkClient, say)
const mcpData = await mcp?.settle(checkClient, say)
const threadData = await threads.settle(checkClient, say)
const workerData = await workers?.settle(checkClient, say)
// The orchestrators still run (and fire schedules): what was stored until now must reach the receiver.
const webhookData = await webhooks?.settle(nc, checkClient, say)
// The orchestrators had the settle time to catch up; runs they queued are recorded by the hosts meanwhile.
schedules.stop()
const scheduled = await (async () => {
  const by = Date.now() + 30_000
  for (;;) {
    const got = await schedules.collect(checkClient, endClock)
    if (scheduleOccurrences({ schedules: got } as RunData).ok || Date.now() > by) return got
    await sleep(1000)
  }
})()
balancer.stop()

const data: RunData = {
  sessions,
  loadStart,
  loadEnd,
  windows: faults.windows,
  attempts: balancer.attempts,
  posts: load.posts,
  calls: load.calls,
  turns: load.turns,
  readers: readers.map((r) => r.rec),
  histories,
  tags: readTags(execLogs, sessions),
  workspaceTags,
  sandboxKills: kills.sandboxes,
  probeChecks: probes.checks,
  uploads: kills.uploads.checks,
  sandboxHostKills: sandboxKills.sandboxes,
  inFlight: sandboxKills.inFlight,
  sandboxHostStarts: sandboxHosts.starts,
  settled,
  hostStarts: hosts.starts,
  schedules: scheduled,
  webhooks: webhookData,
  skills: skillData,
  memories: memoryData,
  mcp: mcpData,
  threads: threadData,
  workers: workerData,
}
const checks = runChecks(data, args.faults.length > 0, args.sandboxHosts > 0)
const failed = checks.some((c) => !c.ok)

say('stopping hosts and NATS')
await Promise.race([hosts.stopAll(), sleep(8_000)])
hosts.killNow()
await Promise.race([sandboxHosts.stopAll(), sleep(8_000)])
sandboxHosts.killNow()
saveLogs()
writeFileSync(path.join(logDir, 'attempts.json'), JSON.stringify(balancer.attempts))
writeFileSync(path.join(logDir, 'windows.json'), JSON.stringify(faults.windows, null, 1))
writeFileSync(path.join(logDir, 'turns.json'), JSON.stringify(load.turns))
writeFileSync(path.join(logDir, 'posts.json'), JSON.stringify(load.posts))
writeFileSync(path.join(logDir, 'readers.json'), JSON.stringify(data.readers))
writeFileSync(path.join(logDir, 'histories.json'), JSON.stringify(Object.fromEntries(histories)))
if (workers) writeFileSync(path.join(logDir, 'beats.json'), JSON.stringify(workers.beats))
if (memoryData) writeFileSync(path.join(logDir, 'memories.json'), JSON.stringify(memoryData))
if (mcpData) writeFileSync(path.join(logDir, 'mcp.json'), JSON.stringify(mcpData))
if (workerData) writeFileSync(path.join(logDir, 'worker-histories.json'), JSON.stringify(workerData.histories))
if (webhookData) writeFileSync(path.join(logDir, 'webhooks.json'), JSON.stringify({ ...webhookData, known: undefined }))
await nc.close().catch(() => undefined)
await cluster.stop()
cleanupNow()
printReport(args, data, checks, runDir)
if (!failed && !args.keep) rmSync(runDir, { recursive: true, force: true })
process.exit(failed ? 1 : 0)
