// `npm run bench -- hardening`: what the seccomp filter and the disk quota cost a tool call, against the same sandbox
// without them, in the same run: isolated sandboxes made as the server makes them (its limits, cgroups and uid),
// alternately with both guards on and both off, BENCH_HARDENING_ROUNDS (default 3) rounds of BENCH_SANDBOX_CALLS
// (default 300) calls of each tool: `bash` (`true`), `write` (a small file: the quota looks after it) and `read`, with an
// empty workspace and with one of BENCH_HARDENING_FILES (default 2,000) files, which each look of the quota walks.
// Ratios are on/off of the median, per round, and the median of those.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { openCgroupRoot } from '../../sandbox/isolated/budget.js'
import { DEFAULT_LIMITS } from '../../sandbox/isolated/limits.js'
import { createIsolatedSandbox, type IsolatedRuntime } from '../../sandbox/isolated/sandbox.js'
import { openSandboxBackend, readSandboxSetting } from '../../sandbox/index.js'

const ROUNDS = Number(process.env.BENCH_HARDENING_ROUNDS ?? 3)
const CALLS = Number(process.env.BENCH_SANDBOX_CALLS ?? 300)
const FILES = Number(process.env.BENCH_HARDENING_FILES ?? 2_000)
const TOOLS = ['bash', 'write', 'read'] as const

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!

async function round(rt: IsolatedRuntime, guards: boolean, files: number): Promise<Record<(typeof TOOLS)[number], number>> {
  const root = mkdtempSync(path.join(tmpdir(), 'troupe-bench-hardening-'))
  const sb = createIsolatedSandbox({ workdir: root }, { ...rt, guards: { seccomp: guards, diskQuota: guards } })
  try {
    const ws = path.join(root, 'workspace')
    for (let d = 0; d < files / 100; d++) {
      mkdirSync(path.join(ws, `d${d}`), { recursive: true })
      for (let f = 0; f < 100; f++) writeFileSync(path.join(ws, `d${d}`, `f${f}.txt`), 'x'.repeat(200))
    }
    await sb.run('bash', { command: 'true' })
    await sb.run('write', { file_path: '/workspace/w.txt', content: 'warm' })
    const input = { bash: { command: 'true' }, write: { file_path: '/workspace/w.txt', content: 'hello' }, read: { file_path: '/workspace/w.txt' } }
    const out = { bash: 0, write: 0, read: 0 }
    for (const tool of TOOLS) {
      const times: number[] = []
      for (let n = 0; n < CALLS; n++) {
        const t0 = performance.now()
        const r = await sb.run(tool, input[tool])
        times.push(performance.now() - t0)
        if (r.is_error) throw new Error(`${tool} failed: ${r.content[0]?.text}`)
      }
      out[tool] = median(times)
    }
    return out
  } finally {
    await sb.close()
    rmSync(root, { recursive: true, force: true })
  }
}

export async function runHardeningBench(): Promise<void> {
  const backend = openSandboxBackend(readSandboxSetting({ ...process.env, TROUPE_SANDBOX: '' }))
  if (backend.kind !== 'isolated') {
    console.log(`hardening: the isolated sandbox cannot start here (${backend.why})`)
    return
  }
  const rt: IsolatedRuntime = {
    limits: DEFAULT_LIMITS,
    cgroups: openCgroupRoot(),
    hostUid: process.geteuid?.() === 0 ? 65534 : null,
    egress: null,
  }
  console.log(`\nhardening: seccomp filter and disk quota on vs off (${ROUNDS} rounds of ${CALLS} calls each; p50 per round)`)
  // A call waits on the sandbox's processes alone, whose handles may not hold the process open by themselves.
  const hold = setInterval(() => undefined, 1000)
  try {
    for (const files of [0, FILES]) {
      const on: Array<Record<string, number>> = []
      const off: Array<Record<string, number>> = []
      for (let i = 0; i < ROUNDS; i++) {
        off.push(await round(rt, false, files))
        on.push(await round(rt, true, files))
      }
      for (const tool of TOOLS) {
        const ratios = on.map((r, i) => r[tool]! / off[i]![tool]!)
        console.log(
          `  ${`${files} files`.padEnd(11)} ${tool.padEnd(6)} on ${on.map((r) => r[tool]!.toFixed(2)).join(' / ')} ms  ` +
            `off ${off.map((r) => r[tool]!.toFixed(2)).join(' / ')} ms  on/off ${median(ratios).toFixed(2)}x`,
        )
      }
    }
  } finally {
    clearInterval(hold)
  }
}
