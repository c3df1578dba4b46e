// What the session benchmarks share: a test bed (nats-server, the fake model in its own process, one `troupe serve`),
// keep-alive JSON requests, a bounded pool, percentiles and a waiter poked by event handlers.
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { startTroupe, type TroupeProcess } from '../helpers/troupe.js'

const here = path.dirname(fileURLToPath(import.meta.url))
export const CREATE_CONCURRENCY = 32

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? NaN
export const summary = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b)
  return { n: s.length, p50: pct(s, 0.5), p99: pct(s, 0.99), max: s[s.length - 1] ?? NaN }
}
export const ms = (x: number) => `${x.toFixed(x < 10 ? 2 : 1)} ms`
export const sleep = (t: number) => new Promise((r) => setTimeout(r, t))

/** One JSON request over a keep-alive agent; rejects on a status other than 200. */
export function request(agent: http.Agent, base: string, method: string, p: string, body?: unknown): Promise<any> {
  const u = new URL(p, base)
  const data = body === undefined ? undefined : Buffer.from(JSON.stringify(body))
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: u.hostname,
        port: u.port,
        path: u.pathname + u.search,
        method,
        agent,
        headers: { 'x-api-key': 'bench', ...(data ? { 'content-type': 'application/json', 'content-length': data.length } : {}) },
      },
      (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c) => chunks.push(c))
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8')
          if (res.statusCode !== 200) return reject(new Error(`${method} ${p}: ${res.statusCode} ${text}`))
          resolve(text ? JSON.parse(text) : undefined)
        })
      },
    )
    req.on('error', reject)
    req.end(data)
  })
}

/** Runs `fn` over `items` with at most `n` in flight. */
export async function pool<T>(items: T[], n: number, fn: (item: T, i: number) => Promise<void>): Promise<void> {
  let next = 0
  await Promise.all(
    Array.from({ length: Math.min(n, items.length) }, async () => {
      while (next < items.length) {
        const i = next++
        await fn(items[i]!, i)
      }
    }),
  )
}

/** Resolves when `cond()` holds, checked whenever `poke` is called; rejects after `timeoutMs`. */
export class Waiter {
  private waiting: Array<{ cond: () => boolean; resolve: () => void }> = []
  poke() {
    if (!this.waiting.length) return
    const due = this.waiting.filter((w) => w.cond())
    this.waiting = this.waiting.filter((w) => !due.includes(w))
    for (const w of due) w.resolve()
  }
  until(cond: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
    if (cond()) return Promise.resolve()
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)), timeoutMs)
      this.waiting.push({
        cond,
        resolve: () => {
          clearTimeout(timer)
          resolve()
        },
      })
    })
  }
}

/** `env`: the model process's settings (model-process.ts: a scripted mode, a fixed delay). */
async function startModel(env: Record<string, string> = {}): Promise<{ url: string; proc: ChildProcess }> {
  const proc = spawn(process.execPath, ['--import', 'tsx', path.join(here, 'model-process.ts')], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, ...env },
  })
  const url = await new Promise<string>((resolve, reject) => {
    let buf = ''
    proc.once('exit', (code) => reject(new Error(`fake model process exited with ${code}`)))
    proc.stdout!.on('data', (d) => {
      buf += d
      const m = /fake model on (\S+)/.exec(buf)
      if (m) resolve(m[1]!)
    })
  })
  return { url, proc }
}

export interface Bed {
  /** The embedded nats-server of `troupe start` (what `npm start` runs). */
  nats: { url: string }
  troupe: TroupeProcess
  model: { url: string; proc: ChildProcess }
  dataDir: string
  agent: http.Agent
  stop(): void
}

/** What is still running, killed synchronously should this process exit without reaching a `finally`. */
const running = new Set<() => void>()
process.on('exit', () => {
  for (const stop of running) stop()
})

/**
 * The server exactly as `npm start` runs it (`troupe start`: its embedded nats-server, the default log level, logs
 * on a pipe that is read), on a free port and its own data directory; `env` adds settings.
 */
export async function startAsNpmStart(env: Record<string, string> = {}): Promise<{ troupe: TroupeProcess; natsUrl: string; dataDir: string }> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'troupe-bench-data-'))
  const profile = process.env.BENCH_PROFILE_DIR
  const nodeArgs = profile ? ['--cpu-prof', `--cpu-prof-dir=${profile}`] : []
  // The log goes to a file, as under a supervisor: `load` blocks this process, which would stop reading a pipe.
  const troupe = await startTroupe({
    role: 'start',
    stderrFile: path.join(dataDir, 'troupe.log'),
    nodeArgs,
    env: { TROUPE_DATA_DIR: dataDir, NATS_URL: '', LOG_LEVEL: '', ...env },
  })
  // The start-up block (printed right after "listening on") names the embedded server.
  const deadline = Date.now() + 5000
  let m: RegExpExecArray | null
  while (!(m = /^\s+NATS\s+(nats:\/\/\S+)/m.exec(troupe.stdout()))) {
    if (Date.now() > deadline) throw new Error(`no NATS line in the start-up block:\n${troupe.stdout()}`)
    await sleep(20)
  }
  return { troupe, natsUrl: m[1]!, dataDir }
}

/** Waits until the server says it is ready (a host that just started takes its partitions first). */
export async function ready(url: string): Promise<void> {
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

/**
 * Stops a server and waits until its process is gone, polling (each poll keeps this process's loop alive: awaiting the
 * child's 'exit' alone let the loop empty here, and node ended the benchmark with an unsettled await, exit code 13).
 */
export async function stopServer(t: TroupeProcess): Promise<void> {
  t.signal('SIGTERM')
  for (let i = 0; i < 200 && t.proc.exitCode === null && t.proc.signalCode === null; i++) await sleep(50)
  if (t.proc.exitCode === null && t.proc.signalCode === null) t.killNow()
}

/** The fake model in its own process (`modelEnv`: its settings) and one `troupe start` (as `npm start` runs it) using it. */
export async function bed(env: Record<string, string> = {}, modelEnv: Record<string, string> = {}): Promise<Bed> {
  const stops: Array<() => void> = []
  const stop = () => {
    running.delete(stop)
    for (const s of stops.reverse()) s()
  }
  running.add(stop)
  try {
    const model = await startModel(modelEnv)
    stops.push(() => void model.proc.kill('SIGKILL'))
    const { troupe, natsUrl, dataDir } = await startAsNpmStart({ TROUPE_MODEL_BASE_URL: model.url, ANTHROPIC_API_KEY: 'fake-key', ...env })
    stops.push(() => rmSync(dataDir, { recursive: true, force: true }))
    // SIGKILL leaves the embedded nats-server to its watchdog, which stops it once our pipe to it closes. A server
    // being profiled is stopped instead, so that it writes its profile.
    stops.push(() => (process.env.BENCH_PROFILE_DIR ? troupe.proc.kill('SIGTERM') : troupe.killNow()))
    const agent = new http.Agent({ keepAlive: true, maxSockets: CREATE_CONCURRENCY })
    stops.push(() => agent.destroy())
    return { nats: { url: natsUrl }, troupe, model, dataDir, agent, stop }
  } catch (err) {
    stop()
    throw err
  }
}

export async function agentAndEnvironment(b: Bed): Promise<{ agentId: string; envId: string }> {
  const a = await request(b.agent, b.troupe.url, 'POST', '/v1/agents', { name: 'bench', model: 'claude-sonnet-4-6' })
  const e = await request(b.agent, b.troupe.url, 'POST', '/v1/environments', { name: 'bench' })
  return { agentId: a.id, envId: e.id }
}

export const userMessage = (text: string) => ({ events: [{ type: 'user.message', content: [{ type: 'text', text }] }] })

export interface LoadResult {
  requests: number
  rps: number
  p50: number
  p99: number
  errors: number
}

const loadArgs = (url: string, method: string, body: string | undefined, durationMs: number, connections: number, ids: string[], apiKey?: string) => [
  '--import',
  'tsx',
  path.join(here, 'loadgen.ts'),
  url,
  method,
  body ?? '-',
  String(durationMs),
  String(connections),
  ids.join(','),
  ...(apiKey === undefined ? [] : [apiKey]),
]
const loadResult = (out: string): LoadResult => JSON.parse(out.trim().split('\n').pop()!)

/** Closed-loop HTTP load from its own process (loadgen.ts): `connections` clients, each sending back to back (with `apiKey` as x-api-key). */
export function load(
  url: string,
  method: string,
  body: string | undefined,
  durationMs: number,
  connections: number,
  ids: string[] = [],
  apiKey?: string,
): LoadResult {
  return loadResult(execFileSync(process.execPath, loadArgs(url, method, body, durationMs, connections, ids, apiKey), { encoding: 'utf8' }))
}

/** `load` without blocking this process, for a benchmark that does something else while the load runs. */
export function loadInBackground(
  url: string,
  method: string,
  durationMs: number,
  connections: number,
  opts: { body?: string; apiKey?: string } = {},
): Promise<LoadResult> {
  return new Promise((resolve, reject) =>
    execFile(process.execPath, loadArgs(url, method, opts.body, durationMs, connections, [], opts.apiKey), { encoding: 'utf8' }, (err, out) =>
      err ? reject(err) : resolve(loadResult(out)),
    ),
  )
}

/** The raw baseline (baseline-server.ts): uWebSockets.js and one NATS request/reply per HTTP request. */
export async function startBaseline(natsUrl: string): Promise<{ url: string; stop(): void }> {
  const proc = spawn(process.execPath, ['--import', 'tsx', path.join(here, 'baseline-server.ts'), natsUrl], { stdio: ['ignore', 'pipe', 'inherit'] })
  const port = await new Promise<string>((resolve) => {
    let buf = ''
    proc.stdout!.on('data', (d) => {
      buf += d
      const m = /listening on (\d+)/.exec(buf)
      if (m) resolve(m[1]!)
    })
  })
  return { url: `http://127.0.0.1:${port}`, stop: () => proc.kill('SIGKILL') }
}
