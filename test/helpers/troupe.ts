import { onExit } from 'signal-exit'
import { spawn, type ChildProcess } from 'node:child_process'
import { closeSync, mkdtempSync, openSync, readdirSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import Anthropic from '@anthropic-ai/sdk'
import { LOG_FLUSH_MS } from '../../supervisor/logger.js'
import { reapOnExit } from './reaper.js'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
const BIN = path.join(ROOT, 'bin/troupe.mjs')

export interface TroupeProcess {
  url: string
  proc: ChildProcess
  /** Everything the process wrote to stderr (its JSON log lines). */
  logs(): string
  /** Everything the process wrote to stdout (where it listens, the start-up block, that it stopped). */
  stdout(): string
  /** SIGKILL (to the whole process group of a supervised start): the process gets no chance to clean up. */
  kill(): Promise<void>
  /** Sends a signal: to the whole process group of a supervised start, else to the process. */
  signal(signal: NodeJS.Signals): void
  /** SIGTERM and wait for exit. */
  stop(): Promise<void>
  /** SIGKILL without waiting, for teardowns that run as the test process exits. */
  killNow(): void
}

export interface StartOptions {
  /** `serve` (default) or `start` */
  role?: 'serve' | 'start' | 'orchestrate' | 'sandbox'
  natsUrl?: string
  strict?: boolean
  env?: Record<string, string>
  /**
   * Write stderr (the log) to this file instead of a pipe this process reads: a benchmark whose own loop blocks
   * (a synchronous load run) would stop reading the pipe, and the server's log would back up. Default: a pipe.
   */
  stderrFile?: string
  /** Arguments for node before the script (`--cpu-prof`, …). Default none. */
  nodeArgs?: string[]
  /**
   * Run this in the checkout instead of `node bin/troupe.mjs <role>`, e.g. `['npm', 'start', '--', '--strict']`, as a
   * process supervisor starts it: in a process group of its own, signalled as a whole as a terminal's Ctrl-C is (npm
   * does not pass a signal on). A killed node's parent dies with it, so it stays a zombie until something reaps it.
   */
  command?: string[]
}

/**
 * `command` as a user runs it: without the hook tap puts in the NODE_OPTIONS of every process a test spawns
 * (@tapjs/processinfo, set by a spawn hook over whatever env is given). It records every module a process loads for
 * coverage, which is off here, and costs a node process a loader thread and about 0.35 s of CPU at each start: over
 * the suite's servers (and the `npm start`s of the crash loops) that is minutes. `env` runs after the hook and sets
 * NODE_OPTIONS again without it, then execs the command in the same process (same pid, same process group).
 */
export function asUserRuns(command: string[], env: NodeJS.ProcessEnv = process.env): string[] {
  const options = (env.NODE_OPTIONS ?? '').split(/\s+/).filter((o) => o && !/@tapjs[\\/]processinfo/.test(o))
  return ['env', `NODE_OPTIONS=${options.join(' ')}`, ...command]
}

/** Starts `troupe <role>` the way a user does, on a free port, and waits for its "listening on" line. */
export function startTroupe(opts: StartOptions = {}): Promise<TroupeProcess> {
  const env: Record<string, string> = { ...(process.env as Record<string, string>), PORT: '0', LOG_LEVEL: 'info', ...opts.env }
  const [cmd, ...args] = asUserRuns(
    opts.command ?? [process.execPath, ...(opts.nodeArgs ?? []), BIN, opts.role ?? 'serve', ...(opts.strict ? ['--strict'] : [])],
    env,
  )
  if (opts.natsUrl) env.NATS_URL = opts.natsUrl
  // One data directory per server (a server locks its own); never the checkout's ./.troupe.
  if (!opts.env?.TROUPE_DATA_DIR) env.TROUPE_DATA_DIR = mkdtempSync(path.join(tmpdir(), 'troupe-data-'))
  const group = opts.command !== undefined
  if (group) env.npm_config_update_notifier = 'false'
  const stderrFd = opts.stderrFile === undefined ? undefined : openSync(opts.stderrFile, 'a')
  const proc = spawn(cmd!, args, { env, cwd: ROOT, stdio: ['ignore', 'pipe', stderrFd ?? 'pipe'], detached: group })
  if (stderrFd !== undefined) closeSync(stderrFd)
  // A group is signalled even once its leader (npm) has exited, since node may still be stopping, but never after a
  // SIGKILL: every process of it is gone then, and its id may come back as another group's.
  let groupKilled = false
  const signal = (sig: NodeJS.Signals) => {
    try {
      if (!group) {
        if (proc.exitCode === null && proc.signalCode === null) proc.kill(sig)
      } else if (!groupKilled) {
        groupKilled = sig === 'SIGKILL'
        process.kill(-proc.pid!, sig)
      }
    } catch {}
  }
  let stderr = ''
  let stdout = ''
  proc.stderr?.on('data', (d) => (stderr += d))
  const exited = new Promise<void>((r) => proc.once('exit', () => r()))
  // A test process that ends (its end, a failure) takes its servers with it; one SIGKILLed (tap's timeout) leaves
  // them to the reaper.
  const remove = onExit(() => signal('SIGKILL'))
  const reaped = reapOnExit(group ? -proc.pid! : proc.pid!)
  proc.once('exit', () => {
    remove()
    reaped.forget()
  })
  return new Promise((resolve, reject) => {
    // Generous: hosts started together on a forming cluster wait out its leader elections, and on a loaded two-core
    // machine that alone has taken more than 30 s.
    const timer = setTimeout(() => reject(new Error(`troupe did not start in time:\n${stdout}\n${stderr}`)), 60_000)
    const early = (code: number | null) => {
      clearTimeout(timer)
      reject(new Error(`troupe exited with ${code}:\n${stdout}\n${stderr}`))
    }
    proc.once('exit', early)
    proc.stdout!.on('data', (d) => {
      stdout += d
      const m = /listening on (http:\/\/\S+)|troupe \w+ ready/.exec(stdout)
      if (!m) return
      clearTimeout(timer)
      proc.off('exit', early)
      // Let the test process reach its end (and run teardowns) while the server still runs.
      proc.unref()
      for (const s of [proc.stdout, proc.stderr] as any[]) s?.unref?.()
      resolve({
        url: m[1] ?? '',
        proc,
        logs: () => stderr,
        stdout: () => stdout,
        signal,
        async kill() {
          proc.ref()
          signal('SIGKILL')
          await exited
        },
        killNow: () => signal('SIGKILL'),
        async stop() {
          proc.ref()
          signal('SIGTERM')
          await exited
          // npm leaves at once; troupe, in the same group, takes its stop's time.
          for (let i = 0; group && i < 250 && groupAlive(proc.pid!); i++) await new Promise((r) => setTimeout(r, 20))
        },
      })
    })
  })
}

/** The official client pointed at a Troupe URL; retries off unless a test wants them. */
export const clientFor = (url: string, opts: { maxRetries?: number } = {}) =>
  new Anthropic({ baseURL: url, apiKey: 'test-key', maxRetries: opts.maxRetries ?? 0 })

/** Raw JSON request for error cases the typed client would not send. */
export async function raw(url: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const init: RequestInit = { method, headers: { ...headers } }
  if (body !== undefined) {
    init.body = typeof body === 'string' ? body : JSON.stringify(body)
    ;(init.headers as Record<string, string>)['content-type'] ??= 'application/json'
  }
  const res = await fetch(url + path, init)
  const text = await res.text()
  let json: any
  try {
    json = JSON.parse(text)
  } catch {
    json = undefined
  }
  return { status: res.status, headers: res.headers, json, text }
}

/**
 * The process's log lines once every line logged before this call has been written: the server writes its lines in
 * batches, at most LOG_FLUSH_MS after they are logged (supervisor/logger.ts).
 */
export async function settledLogLines(troupe: Pick<TroupeProcess, 'logs'>): Promise<Array<Record<string, unknown>>> {
  await new Promise((r) => setTimeout(r, 2 * LOG_FLUSH_MS))
  return logLines(troupe)
}

/** The process's log lines so far (stderr): JSON lines parsed, any other line as `{ msg: line }`. */
export function logLines(troupe: Pick<TroupeProcess, 'logs'>): Array<Record<string, unknown>> {
  return troupe
    .logs()
    .split('\n')
    .filter(Boolean)
    .map((l) => {
      try {
        return JSON.parse(l) as Record<string, unknown>
      } catch {
        return { msg: l }
      }
    })
}

/** True while a process of the group runs: one that exited but is not yet reaped (a zombie) does not count. */
export function groupAlive(pgid: number): boolean {
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
      // After the command's closing parenthesis: state, ppid, pgrp.
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      if (Number(pgrp) === pgid && state !== 'Z' && state !== 'X') return true
    } catch {}
  }
  return false
}
