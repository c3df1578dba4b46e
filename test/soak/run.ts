// `npm run soak -- [--sessions 200] [--seconds 120] [--hog-seconds 60] [--idle-seconds 60]`: one `troupe start`
// host, N sessions doing turns back to back (one in four with a bash tool call) against the fake model, while two
// busy-loop processes hog the CPU for the middle of the run. Prints turns/s, turn latency, 5xx, rescheduled
// turns, partitions lost, sessions not idle 30 s after, RSS before and after, and (first) the host's idle CPU.
// Exits 1 when a target is missed: 0 partitions lost, 0 rescheduled, 0 5xx, 0 stuck.
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { clientFor, logLines, startTroupe } from '../helpers/troupe.js'

const here = path.dirname(fileURLToPath(import.meta.url))
const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(`--${name}`)
  const v = i >= 0 ? Number(process.argv[i + 1]) : dflt
  if (!Number.isFinite(v) || v < 0) throw new Error(`--${name} must be a number`)
  return v
}
const SESSIONS = arg('sessions', 200)
const SECONDS = arg('seconds', 120)
const HOG_SECONDS = arg('hog-seconds', 60)
const IDLE_SECONDS = arg('idle-seconds', 60)
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** CPU seconds (user + system) a process has used, from /proc. */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(f[11]) + Number(f[12])) / 100
}
const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]! : NaN
}

const dataDir = mkdtempSync(path.join(os.tmpdir(), 'troupe-soak-'))
const children: ChildProcess[] = []
const cleanup = () => {
  for (const c of children) c.kill('SIGKILL')
}
process.on('exit', cleanup)

const modelProc = spawn(process.execPath, ['--import', 'tsx', path.join(here, 'model.ts')], { stdio: ['ignore', 'pipe', 'inherit'] })
children.push(modelProc)
const modelUrl = await new Promise<string>((resolve) => {
  let buf = ''
  modelProc.stdout!.on('data', (d) => {
    buf += d
    const m = /fake model on (\S+)/.exec(buf)
    if (m) resolve(m[1]!)
  })
})
const troupe = await startTroupe({
  role: 'start',
  // Local sandboxes: every session's bash appends to one shared file beside the sessions' directories, which no
  // isolated sandbox can reach.
  env: { NATS_URL: '', TROUPE_DATA_DIR: dataDir, TROUPE_MODEL_BASE_URL: modelUrl, ANTHROPIC_API_KEY: 'k', LOG_LEVEL: 'info', TROUPE_SANDBOX: 'local' },
})
const pid = troupe.proc.pid!
const natsPgid: number = JSON.parse(readFileSync(path.join(dataDir, 'troupe.lock'), 'utf8')).nats_pgid
const natsPid = Number(readFileSync(`/proc/${natsPgid}/task/${natsPgid}/children`, 'utf8').trim().split(' ')[0])
console.log(`troupe start on ${troupe.url} (pid ${pid}), nats-server pid ${natsPid}, data ${dataDir}`)

if (IDLE_SECONDS > 0) {
  await sleep(2000)
  const [t0, n0] = [cpuSeconds(pid), cpuSeconds(natsPid)]
  await sleep(IDLE_SECONDS * 1000)
  const [t1, n1] = [cpuSeconds(pid), cpuSeconds(natsPid)]
  console.log(
    `idle CPU over ${IDLE_SECONDS} s: troupe ${((100 * (t1 - t0)) / IDLE_SECONDS).toFixed(2)} % of a core, nats-server ${((100 * (n1 - n0)) / IDLE_SECONDS).toFixed(2)} %`,
  )
}

const client = clientFor(troupe.url, { maxRetries: 0 })
const plain = await client.beta.agents.create({ name: 'soak', model: 'claude-sonnet-4-5' })
const tooled = await client.beta.agents.create({ name: 'soak-bash', model: 'claude-sonnet-4-5', tools: [{ type: 'agent_toolset_20260401' }] } as any)
const env = await client.beta.environments.create({ name: 'soak' })
const sessions: Array<{ id: string; bash: boolean }> = []
for (let i = 0; i < SESSIONS; i++) {
  const bash = i % 4 === 0
  const s = await client.beta.sessions.create({ agent: bash ? tooled.id : plain.id, environment_id: env.id } as any)
  sessions.push({ id: s.id, bash })
}
const rssBefore = rssMb(pid)
console.log(`${SESSIONS} sessions created; RSS ${rssBefore.toFixed(0)} MB; running ${SECONDS} s, CPU hogs for the middle ${HOG_SECONDS} s`)

const latencies: number[] = []
const statuses = new Map<number, number>()
let turns = 0
let rescheduled = 0
let bashCalls = 0
let failures = 0
const start = Date.now()
const end = start + SECONDS * 1000

async function drive(s: { id: string; bash: boolean }, n: number): Promise<void> {
  const stream = await client.beta.sessions.events.stream(s.id)
  const it = stream[Symbol.asyncIterator]()
  for (let i = 0; Date.now() < end; i++) {
    const text = s.bash && i % 2 === 0 ? `bash ${s.id}-${i}` : `hello ${i}`
    const t0 = performance.now()
    const res = await fetch(`${troupe.url}/v1/sessions/${s.id}/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': 'k', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ events: [{ type: 'user.message', content: [{ type: 'text', text }] }] }),
    }).catch(() => undefined)
    const status = res?.status ?? 0
    statuses.set(status, (statuses.get(status) ?? 0) + 1)
    await res?.arrayBuffer()
    if (status !== 200) {
      failures++
      await sleep(200)
      continue
    }
    if (text.startsWith('bash')) bashCalls++
    for (;;) {
      const r = await it.next()
      if (r.done) return
      if (r.value.type === 'session.status_rescheduled') rescheduled++
      if (r.value.type === 'session.status_idle') break
    }
    latencies.push(performance.now() - t0)
    turns++
  }
  void n
  stream.controller.abort()
}

let hogs: ChildProcess[] = []
const hogAt = setTimeout(
  () => {
    hogs = [0, 1].map(() => spawn(process.execPath, ['-e', 'for(;;){}'], { stdio: 'ignore' }))
    children.push(...hogs)
    console.log(`  ${((Date.now() - start) / 1000).toFixed(0)} s: two CPU hogs started`)
  },
  ((SECONDS - HOG_SECONDS) / 2) * 1000,
)
const unhogAt = setTimeout(
  () => {
    for (const h of hogs) h.kill('SIGKILL')
    console.log(`  ${((Date.now() - start) / 1000).toFixed(0)} s: CPU hogs stopped`)
  },
  ((SECONDS + HOG_SECONDS) / 2) * 1000,
)
const ticker = setInterval(() => console.log(`  ${((Date.now() - start) / 1000).toFixed(0)} s: ${turns} turns`), 15_000)

await Promise.all(
  sessions.map((s, i) =>
    drive(s, i).catch((err) => {
      failures++
      console.log(`session ${s.id} driver failed: ${err.message}`)
    }),
  ),
)
clearInterval(ticker)
clearTimeout(hogAt)
clearTimeout(unhogAt)
for (const h of hogs) h.kill('SIGKILL')
const elapsed = (Date.now() - start) / 1000

// Sessions not idle 30 s after the load ends are stuck.
const settleEnd = Date.now() + 30_000
let stuck: string[] = []
do {
  stuck = []
  for (const s of sessions) {
    const got = await client.beta.sessions.retrieve(s.id).catch(() => undefined)
    if (got?.status !== 'idle') stuck.push(`${s.id}:${got?.status ?? 'unreachable'}`)
  }
  if (stuck.length) await sleep(1000)
} while (stuck.length && Date.now() < settleEnd)
const rssAfter = rssMb(pid)

const logs = logLines(troupe)
const partitionsLost = logs.filter((l) => l.msg === 'partitions changed' && Object.keys((l.lost as object | undefined) ?? {}).length).length
const fenceLost = logs.filter((l) => /fence lost/.test(String(l.msg ?? ''))).length
const fivexx = [...statuses].filter(([s]) => s >= 500 || s === 0).reduce((n, [, c]) => n + c, 0)
let runs = 0
try {
  runs = readFileSync(path.join(dataDir, 'sessions', 'runs.log'), 'utf8')
    .split('\n')
    .filter(Boolean).length
} catch {}

console.log(`
soak: ${SESSIONS} sessions, ${elapsed.toFixed(0)} s, CPU hogs for ${HOG_SECONDS} s
  turns            ${turns} (${(turns / elapsed).toFixed(1)} turns/s), bash calls asked ${bashCalls}
  turn latency     p50 ${pct(latencies, 50).toFixed(1)} ms, p99 ${pct(latencies, 99).toFixed(1)} ms, max ${Math.max(...latencies).toFixed(0)} ms
  POST statuses    ${[...statuses].map(([s, c]) => `${s || 'network error'}: ${c}`).join(', ')}
  5xx              ${fivexx}
  rescheduled      ${rescheduled}
  partitions lost  ${partitionsLost} log lines (fence lost: ${fenceLost})
  stuck after 30 s ${stuck.length}${stuck.length ? ` (${stuck.slice(0, 5).join(', ')}…)` : ''}
  RSS              ${rssBefore.toFixed(0)} MB → ${rssAfter.toFixed(0)} MB`)
console.log(`  bash runs        ${runs} recorded for ${bashCalls} asked`)
const ok = fivexx === 0 && rescheduled === 0 && partitionsLost === 0 && stuck.length === 0 && failures === 0
console.log(ok ? 'soak: every target met' : 'soak: TARGET MISSED')
await troupe.stop()
cleanup()
rmSync(dataDir, { recursive: true, force: true })
process.exit(ok ? 0 : 1)
