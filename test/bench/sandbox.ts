// `npm run bench -- sandbox`: what the isolated backend costs against the local one, in the same run, through the
// backends the server uses (`openSandboxBackend`, as `troupe start` opens them): a sandbox's start-up (its first
// `bash` call, shell start included; then its first file tool call, tool server start included), then round trips
// of `bash` (`true`) and `read` (a small file) on a warm sandbox, p50/p99. BENCH_SANDBOX_STARTS (default 10) sandboxes,
// BENCH_SANDBOX_CALLS (default 300) calls each kind. The isolated backend twice: without a network, and with one
// (`unrestricted`: its egress proxy and the forwarder inside start with the shell).
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { type EgressPolicy, openSandboxBackend, readSandboxSetting, type SandboxBackend } from '../../sandbox/index.js'

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

export async function runSandboxBench(): Promise<void> {
  const backends: Array<[string, SandboxBackend, EgressPolicy?]> = [['local', openSandboxBackend(readSandboxSetting({ TROUPE_SANDBOX: 'local' }))]]
  const isolated = openSandboxBackend(readSandboxSetting({ ...process.env, TROUPE_SANDBOX: '' }))
  if (isolated.kind === 'isolated') {
    backends.push(['isolated', isolated])
    if (isolated.enforcesNetwork) backends.push(['isolated+net', isolated, { type: 'unrestricted' }])
  } else console.log(`sandbox: isolated cannot start here (${isolated.why}); local only`)
  const results = new Map<string, Figures>()
  for (const [kind, b, network] of backends) results.set(kind, await measure(b, network))
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
}
