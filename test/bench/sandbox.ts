// `npm run bench -- sandbox`: what the isolated backend costs against the local one, in the same run, through the
// backends the server uses (`openSandboxBackend`, as `troupe start` opens them): a sandbox's start-up (its first
// `bash` call, shell start included; then its first file tool call, tool server start included), then round trips
// of `bash` (`true`) and `read` (a small file) on a warm sandbox, p50/p99. BENCH_SANDBOX_STARTS (default 10) sandboxes,
// BENCH_SANDBOX_CALLS (default 300) calls each kind. The isolated backend twice: without a network, and with one
// (`unrestricted`: its egress proxy and the forwarder inside start with the shell). Then a session's sandbox (the
// isolated one with a network, its workspace checked after each call as a session's is) as an actor host runs it, and
// on a sandbox host (`troupe sandbox`, started as a user starts it, against a nats-server of its own) through the
// client a host with TROUPE_SANDBOX_PLACEMENT=remote uses, beside a raw NATS request round trip for the hop itself.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { jetstream, jetstreamManager } from '@nats-io/jetstream'
import { Kvm } from '@nats-io/kv'
import { connect } from '@nats-io/transport-node'
import pino from 'pino'
import { Roster } from '../../actors/kit/roster.js'
import { RemoteSandbox } from '../../actors/workdir/remote-sandbox.js'
import { sandboxHostDeps } from '../../actors/workdir/sandbox-host.js'
import type { SandboxOwner } from '../../actors/workdir/port.js'
import { InProcessSandbox } from '../../actors/workdir/in-process.js'
import type { SessionSandbox } from '../../actors/workdir/index.js'
import { newId } from '../../protocol/ids.js'
import { Buckets, SANDBOX_HOST_PREFIX, type SandboxHostBeat } from '../../protocol/subjects.js'
import { type EgressPolicy, openSandboxBackend, readSandboxSetting, type SandboxBackend } from '../../sandbox/index.js'
import { HOST_TTL_MS } from '../../supervisor/placement.js'
import { startNats } from '../helpers/nats.js'
import { startTroupe } from '../helpers/troupe.js'

const STARTS = Number(process.env.BENCH_SANDBOX_STARTS ?? 10)
const CALLS = Number(process.env.BENCH_SANDBOX_CALLS ?? 300)

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!
const fmt = (xs: number[]) => `p50 ${pct(xs, 0.5).toFixed(2)} ms  p99 ${pct(xs, 0.99).toFixed(2)} ms`

interface Figures {
  shellStart: number[]
  toolsStart: number[]
  bash: number[]
  read: number[]
}

async function measure(backend: SandboxBackend, network?: EgressPolicy): Promise<Figures> {
  const root = mkdtempSync(path.join(tmpdir(), 'troupe-bench-sandbox-'))
  const f: Figures = { shellStart: [], toolsStart: [], bash: [], read: [] }
  try {
    for (let i = 0; i < STARTS; i++) {
      const sb = backend.create({ workdir: path.join(root, String(i)), network })
      let t0 = performance.now()
      const r = await sb.run('bash', { command: 'echo hi > f.txt' })
      f.shellStart.push(performance.now() - t0)
      if (r.is_error) throw new Error(`bash failed on ${backend.kind}: ${r.content[0]?.text}`)
      t0 = performance.now()
      await sb.run('read', { file_path: 'f.txt' })
      f.toolsStart.push(performance.now() - t0)
      if (i === STARTS - 1) {
        for (let n = 0; n < CALLS; n++) {
          t0 = performance.now()
          await sb.run('bash', { command: 'true' })
          f.bash.push(performance.now() - t0)
        }
        for (let n = 0; n < CALLS; n++) {
          t0 = performance.now()
          await sb.run('read', { file_path: 'f.txt' })
          f.read.push(performance.now() - t0)
        }
      }
      await sb.close()
    }
  } finally {
    rmSync(root, { recursive: true, force: true })
  }
  return f
}

/** The figures of a session's sandbox (prepare, then the tools), made anew for each start. */
async function measureSession(make: () => SessionSandbox): Promise<Figures> {
  const f: Figures = { shellStart: [], toolsStart: [], bash: [], read: [] }
  const signal = new AbortController().signal
  for (let i = 0; i < STARTS; i++) {
    const sb = make()
    let t0 = performance.now()
    const ready = await sb.prepare(signal)
    if (ready.kind !== 'ready') throw new Error(`prepare: ${JSON.stringify(ready)}`)
    const r = await sb.runTool('bash', { command: 'echo hi > f.txt' }, signal)
    f.shellStart.push(performance.now() - t0)
    if (r.is_error) throw new Error(`bash failed: ${r.content[0]?.text}`)
    t0 = performance.now()
    await sb.runTool('read', { file_path: 'f.txt' }, signal)
    f.toolsStart.push(performance.now() - t0)
    if (i === STARTS - 1) {
      for (let n = 0; n < CALLS; n++) {
        t0 = performance.now()
        await sb.runTool('bash', { command: 'true' }, signal)
        f.bash.push(performance.now() - t0)
      }
      for (let n = 0; n < CALLS; n++) {
        t0 = performance.now()
        await sb.runTool('read', { file_path: 'f.txt' }, signal)
        f.read.push(performance.now() - t0)
      }
    }
    await sb.remove()
  }
  return f
}

/**
 * A session's sandbox as an actor host runs it (`InProcessSandbox`, the workspace checked after each call) and as a
 * sandbox host runs it for an actor elsewhere (`RemoteSandbox` to a `troupe sandbox`); and a raw NATS request's
 * round trip, the hop's floor.
 */
async function measureSessions(backend: SandboxBackend): Promise<{ here: Figures; remote: Figures; raw: number[] }> {
  // The servers below are unref'd (as in tests): hold the process open while it waits on them.
  const hold = setInterval(() => undefined, 1000)
  const nats = await startNats()
  const dataDir = mkdtempSync(path.join(tmpdir(), 'troupe-bench-sbx-'))
  const hereDir = mkdtempSync(path.join(tmpdir(), 'troupe-bench-here-'))
  const host = await startTroupe({ role: 'sandbox', natsUrl: nats.url, env: { TROUPE_DATA_DIR: dataDir } })
  const nc = await connect({ servers: nats.url })
  try {
    const js = jetstream(nc)
    const jsm = await jetstreamManager(nc)
    const log = pino({ level: 'warn' })
    const spec = { network: { type: 'unrestricted' as const }, packages: { apt: [], cargo: [], gem: [], go: [], npm: [], pip: [] }, resources: [], skills: [] }
    const owner: SandboxOwner = { dead: false, alive: () => undefined, checkServing: () => undefined, report: () => undefined }
    const deps = await sandboxHostDeps({ nc, storage: { jsm, replicas: 1, lowerReplicas: false, log }, log, dataDir: hereDir, backend })
    const here = await measureSession(() => new InProcessSandbox(newId('sesn'), () => spec, owner, deps))
    const roster = new Roster<SandboxHostBeat>(await new Kvm(js).open(Buckets.hosts), { prefix: SANDBOX_HOST_PREFIX, beatMs: 500, ttlMs: HOST_TTL_MS, log })
    await roster.start()
    const remote = await measureSession(
      () =>
        new RemoteSandbox({
          session: newId('sesn'),
          fence: 1,
          spec: () => spec,
          report: () => undefined,
          serves: () => true,
          roster,
          nc,
          workspaces: deps.workspaces,
          shellIdleMs: 600_000,
          log,
        }),
    )
    await roster.stop()
    const echo = nc.subscribe('bench.echo', { callback: (_e, m) => void m.respond(m.data) })
    const payload = new Uint8Array(200)
    const raw: number[] = []
    for (let n = 0; n < CALLS; n++) {
      const t0 = performance.now()
      await nc.request('bench.echo', payload)
      raw.push(performance.now() - t0)
    }
    echo.unsubscribe()
    return { here, remote, raw }
  } finally {
    await nc.close()
    await host.stop()
    await nats.stop()
    rmSync(dataDir, { recursive: true, force: true })
    rmSync(hereDir, { recursive: true, force: true })
    clearInterval(hold)
  }
}

export async function runSandboxBench(): Promise<void> {
  const backends: Array<[string, SandboxBackend, EgressPolicy?]> = [['local', openSandboxBackend(readSandboxSetting({ TROUPE_SANDBOX: 'local' }))]]
  const isolated = openSandboxBackend(readSandboxSetting({ ...process.env, TROUPE_SANDBOX: '' }))
  if (isolated.kind === 'isolated') {
    backends.push(['isolated', isolated])
    if (isolated.enforcesNetwork) backends.push(['isolated+net', isolated, { type: 'unrestricted' }])
  } else console.log(`sandbox: isolated cannot start here (${isolated.why}); local only`)
  const results = new Map<string, Figures>()
  for (const [kind, b, network] of backends) results.set(kind, await measure(b, network))
  let raw: number[] | undefined
  if (isolated.kind === 'isolated' && isolated.enforcesNetwork) {
    const sessions = await measureSessions(isolated)
    results.set('session here', sessions.here)
    results.set('session remote', sessions.remote)
    raw = sessions.raw
  }
  console.log(`\nsandbox (${STARTS} sandboxes, ${CALLS} calls each)`)
  for (const [kind, f] of results) {
    console.log(`  ${kind.padEnd(12)} start (first bash)   ${fmt(f.shellStart)}`)
    console.log(`  ${kind.padEnd(12)} first file tool      ${fmt(f.toolsStart)}`)
    console.log(`  ${kind.padEnd(12)} bash round trip      ${fmt(f.bash)}`)
    console.log(`  ${kind.padEnd(12)} read round trip      ${fmt(f.read)}`)
  }
  const local = results.get('local')
  const ratio = (a: number[], b: number[]) => (pct(a, 0.5) / pct(b, 0.5)).toFixed(2)
  for (const kind of ['isolated', 'isolated+net']) {
    const iso = results.get(kind)
    if (!local || !iso) continue
    console.log(
      `  ${kind} / local (p50): start ${ratio(iso.shellStart, local.shellStart)}x, bash ${ratio(iso.bash, local.bash)}x, read ${ratio(iso.read, local.read)}x`,
    )
  }
  const here = results.get('session here')
  const remote = results.get('session remote')
  if (here && remote && raw) {
    const extra = pct(remote.bash, 0.5) - pct(here.bash, 0.5)
    console.log(`  raw NATS request (baseline) ${fmt(raw)}`)
    console.log(
      `  session remote / here (p50): start ${ratio(remote.shellStart, here.shellStart)}x, bash ${ratio(remote.bash, here.bash)}x, read ${ratio(remote.read, here.read)}x; ` +
        `the hop adds ${extra.toFixed(2)} ms to a bash call = ${(extra / pct(raw, 0.5)).toFixed(1)} raw requests`,
    )
  }
}
