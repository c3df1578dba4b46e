// The `troupe serve` processes under test (or the `troupe sandbox` ones running their sessions' sandboxes): each with
// its own data directory, so a restart after a kill is the same host (same host id, kept in the directory) taking its
// partitions (or its sandboxes' directories) back, as in production.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { spawn, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { onCleanup } from './cleanup.js'
import type { HostStart } from './types.js'

export interface HostOptions {
  /** Which `troupe` command the processes run. Default serve. */
  role?: 'serve' | 'sandbox'
  count: number
  /** Every NATS node, comma-separated: the hosts fail over between them as any client would. */
  natsUrl: string
  /** The nodes' monitoring endpoints, to find when a restarted host's NATS connection opened. */
  natsMonitors: () => string[]
  /** The fake model (serve hosts only). */
  modelUrl?: string
  dir: string
  /** More environment for every host (the schedule clock). */
  env?: Record<string, string>
}

export class Host {
  /** The gateway's URL while the process runs (a restart listens on a new free port); none for a sandbox host. */
  url: string | undefined
  /** Stable across restarts: it lives in the data directory. */
  id: string | undefined
  state: 'up' | 'paused' | 'down' = 'down'
  /** Every incarnation, for the logs. */
  readonly procs: ServeProcess[] = []
  /** Starts that never came up: what each printed (its stdout and its stderr's end), for the logs. */
  readonly failedStarts: string[] = []

  constructor(
    readonly name: string,
    readonly dataDir: string,
  ) {}

  get proc(): ServeProcess | undefined {
    return this.procs.at(-1)
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
/** How long a start may take to print its block, and then to say ready, before the run gives up on it. */
const READY_BOUND_MS = 30_000
/**
 * A start-up from the TypeScript sources (tsx) on a busy two-core machine has been seen to take 30 s: longer than
 * startTroupe's bound, which also leaves the process running when it gives up. Hence our own spawn, below.
 */
const START_BOUND_MS = 120_000
const BIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../bin/troupe.mjs')

export class Hosts {
  readonly all: Host[]
  readonly starts: HostStart[] = []

  private readonly role: 'serve' | 'sandbox'

  constructor(private readonly o: HostOptions) {
    this.role = o.role ?? 'serve'
    const prefix = this.role === 'serve' ? 'h' : 's'
    this.all = Array.from({ length: o.count }, (_, i) => {
      const dataDir = path.join(o.dir, `${prefix}${i + 1}`)
      mkdirSync(dataDir, { recursive: true })
      return new Host(`${prefix}${i + 1}`, dataDir)
    })
    onCleanup(() => this.killNow())
  }

  byId(id: string | undefined): Host | undefined {
    return this.all.find((h) => h.id === id)
  }

  /** Starts one host (or starts it again) and measures its readiness; never throws, the record says what failed. */
  async start(h: Host, restart: boolean): Promise<HostStart> {
    const rec: HostStart = { host: h.name, restart, spawnAt: Date.now() }
    this.starts.push(rec)
    try {
      const serve = this.role === 'serve'
      const proc = await spawnTroupe(this.role, h.dataDir, {
        NATS_URL: this.o.natsUrl,
        TROUPE_DATA_DIR: h.dataDir,
        // Streams and buckets replicated on all three servers, so losing one loses nothing stored.
        TROUPE_REPLICAS: '3',
        ...(serve && {
          TROUPE_MODEL_BASE_URL: this.o.modelUrl!,
          ANTHROPIC_API_KEY: 'chaos',
          // Keepalives every second let an SSE reader tell a silent (stopped) gateway from a quiet session.
          TROUPE_SSE_KEEPALIVE_MS: '1000',
          TROUPE_MODEL_RETRY_BASE_MS: '200',
        }),
        LOG_LEVEL: 'info',
        ...this.o.env,
      })
      rec.blockAt = Date.now()
      h.procs.push(proc)
      h.url = proc.url
      // The start-up block may still be on its way when the ready line arrives; the directory has the id for sure.
      h.id = readFileSync(path.join(h.dataDir, 'host-id'), 'utf8').trim()
      h.state = 'up'
      // A sandbox host says "troupe sandbox ready" once it is in the roster: that line is its readiness.
      if (!serve) {
        rec.readyAt = rec.blockAt
        return rec
      }
      rec.readyAt = await this.waitReady(h, rec)
      // Only a restart: the first starts run together, and their connections cannot be told apart.
      if (restart) rec.natsAt = await this.natsConnectedAt(rec.spawnAt)
      if (rec.readyAt === undefined) rec.error = `/readyz was not 200 within ${READY_BOUND_MS} ms`
    } catch (err) {
      rec.error = (err as Error).message.split('\n')[0]
      h.failedStarts.push((err as Error).message)
    }
    return rec
  }

  /** Polls /readyz; what it said while not ready goes to `rec.notReady` (what a slow restart waited for). */
  private async waitReady(h: Host, rec: HostStart): Promise<number | undefined> {
    const deadline = Date.now() + READY_BOUND_MS
    const seen = new Map<string, number>()
    while (Date.now() < deadline && h.url) {
      try {
        const res = await fetch(`${h.url}/readyz`, { signal: AbortSignal.timeout(1000) })
        const body = await res.text()
        if (res.status === 200) return Date.now()
        const said = JSON.parse(body) as { checks?: Record<string, boolean>; waiting?: string }
        const failing =
          Object.entries(said.checks ?? {})
            .filter(([, ok]) => !ok)
            .map(([k]) => k)
            .join('+') + (said.waiting ? ` (${said.waiting.replace(/host_\w+/, 'host')})` : '')
        seen.set(failing, (seen.get(failing) ?? 0) + 1)
        rec.notReady = [...seen].map(([k, n]) => `${k || '?'} ×${n}`).join(', ')
      } catch {
        seen.set('no answer', (seen.get('no answer') ?? 0) + 1)
      }
      await sleep(100)
    }
    return undefined
  }

  /**
   * The earliest client connection named `troupe` opened after `since` on any node: faults come one at a time,
   * so while a host restarts no other troupe process opens a connection.
   */
  private async natsConnectedAt(since: number): Promise<number | undefined> {
    let best: number | undefined
    for (const m of this.o.natsMonitors()) {
      try {
        const res = await fetch(`${m}/connz?limit=4096`, { signal: AbortSignal.timeout(1000) })
        const connz = (await res.json()) as { connections?: Array<{ name?: string; start?: string }> }
        for (const c of connz.connections ?? []) {
          const at = c.start ? Date.parse(c.start) : NaN
          if (c.name === 'troupe' && at >= since && (best === undefined || at < best)) best = at
        }
      } catch {}
    }
    return best
  }

  async kill(h: Host): Promise<void> {
    await h.proc?.kill()
    h.state = 'down'
    h.url = undefined
  }

  pause(h: Host): void {
    const pid = h.proc?.proc.pid
    if (pid && h.state === 'up') {
      process.kill(pid, 'SIGSTOP')
      h.state = 'paused'
    }
  }

  resume(h: Host): void {
    const pid = h.proc?.proc.pid
    if (pid && h.state === 'paused') {
      process.kill(pid, 'SIGCONT')
      h.state = 'up'
    }
  }

  async stopAll(): Promise<void> {
    for (const h of this.all) this.resume(h)
    await Promise.all(this.all.map((h) => h.proc?.stop().catch(() => undefined)))
    for (const h of this.all) h.state = 'down'
  }

  killNow(): void {
    for (const h of this.all) h.proc?.killNow()
  }

  /** Writes every incarnation's stdout and stderr to `dir`, as h1.1.log, h1.2.log, … */
  writeLogs(dir: string): void {
    mkdirSync(dir, { recursive: true })
    for (const h of this.all) {
      for (const [i, p] of h.procs.entries()) writeFileSync(path.join(dir, `${h.name}.${i + 1}.log`), `${p.stdout()}\n--- stderr ---\n${p.logs()}`)
      for (const [i, text] of h.failedStarts.entries()) writeFileSync(path.join(dir, `${h.name}.failed-${i + 1}.log`), text)
    }
  }
}

/** One `troupe serve` process, as startTroupe gives it, but registered before it is up (so it is always killed). */
export interface ServeProcess {
  /** None for `troupe sandbox`, which has no gateway. */
  url: string | undefined
  proc: ChildProcess
  stdout(): string
  /** Its stderr: the JSON log lines. */
  logs(): string
  kill(): Promise<void>
  stop(): Promise<void>
  killNow(): void
}

/**
 * Starts `troupe <role>` exactly as test/helpers/troupe.ts does (same binary, PORT=0, the "listening on" line or
 * "troupe sandbox ready"), with a longer bound, and kills the process if it does not come up in time.
 */
function spawnTroupe(role: 'serve' | 'sandbox', dataDir: string, env: Record<string, string>): Promise<ServeProcess> {
  const proc = spawn(process.execPath, [BIN, role], {
    env: { ...(process.env as Record<string, string>), PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  proc.stderr!.on('data', (d) => (stderr += d))
  const exited = new Promise<void>((r) => proc.once('exit', () => r()))
  const alive = () => proc.exitCode === null && proc.signalCode === null
  const killNow = () => {
    if (!alive()) return
    try {
      process.kill(proc.pid!, 'SIGCONT')
    } catch {}
    proc.kill('SIGKILL')
  }
  onCleanup(killNow)
  return new Promise((resolve, reject) => {
    const fail = (why: string) => {
      clearTimeout(timer)
      killNow()
      reject(new Error(`${why}:\n${stdout}\n--- stderr (its end) ---\n${stderr.slice(-20_000)}`))
    }
    const timer = setTimeout(() => fail(`troupe ${role} on ${dataDir} did not print its start-up block within ${START_BOUND_MS} ms`), START_BOUND_MS)
    const early = (code: number | null) => fail(`troupe ${role} exited with ${code}`)
    proc.once('exit', early)
    proc.stdout!.on('data', (d) => {
      stdout += d
      const m = /listening on (http:\/\/\S+)|troupe sandbox ready/.exec(stdout)
      if (!m) return
      clearTimeout(timer)
      proc.off('exit', early)
      proc.stdout!.removeAllListeners('data')
      proc.stdout!.on('data', (more) => (stdout += more))
      resolve({
        url: m[1],
        proc,
        stdout: () => stdout,
        logs: () => stderr,
        killNow,
        async kill() {
          killNow()
          await exited
        },
        async stop() {
          if (alive()) proc.kill('SIGTERM')
          await exited
        },
      })
    })
  })
}
