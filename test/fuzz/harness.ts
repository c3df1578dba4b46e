import { randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { startNats, type TestNats } from '../helpers/nats.js'
import { LOOP_PROBE_ENV } from '../helpers/loop-stall.js'
import { startTroupe, type TroupeProcess } from '../helpers/troupe.js'
import type { HttpTransport } from './types.js'
import { FUZZ_ADMIN_KEY } from './wire.js'

/** The server under test: its own nats-server on a free port and one `troupe serve`, as the tests run them. */
export interface Server {
  url: string
  port: number
  pid: number
  troupe: TroupeProcess
  /** Set once the process has exited, with how. */
  died(): string | undefined
  stop(): Promise<void>
}

export async function startServer(http: HttpTransport | undefined): Promise<Server> {
  const nats: TestNats = await startNats()
  let troupe: TroupeProcess
  try {
    // Keys off for the API (every route as a client without keys reaches it), the admin routes reached with an admin key.
    const env = {
      LOG_LEVEL: 'info',
      TROUPE_VAULT_KEYRING_FILE: keyringFile(),
      TROUPE_AUTH: 'off',
      TROUPE_ADMIN_KEY_FILE: adminKeyFile(),
      ...LOOP_PROBE_ENV,
      ...(http ? { TROUPE_HTTP: http } : {}),
    }
    troupe = await startTroupe({ natsUrl: nats.url, env })
  } catch (err) {
    await nats.stop()
    throw err
  }
  let death: string | undefined
  troupe.proc.once('exit', (code, signal) => (death = `exited with ${signal ?? code}`))
  return {
    url: troupe.url,
    port: Number(new URL(troupe.url).port),
    pid: troupe.proc.pid!,
    troupe,
    died: () => death,
    async stop() {
      await troupe.kill()
      await nats.stop()
    },
  }
}

/**
 * A GET that gives up after `timeoutMs` (a server stalled by a hostile request must not stall the run's end
 * checks with it): status and text, status 0 when it gave up or could not connect.
 */
export async function get(url: string, path: string, timeoutMs = 30_000): Promise<{ status: number; text: string; json: any }> {
  try {
    const res = await fetch(url + path, { signal: AbortSignal.timeout(timeoutMs) })
    const text = await res.text()
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch {}
    return { status: res.status, text, json }
  } catch (e) {
    return { status: 0, text: `no answer: ${(e as Error).message}`, json: undefined }
  }
}

/** Polls /readyz until it answers 200. */
export async function waitReady(url: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const r = await get(url, '/readyz', 5_000)
    if (r.status === 200) return
    if (Date.now() > deadline) throw new Error(`/readyz not 200 after ${timeoutMs} ms: ${r.status} ${r.text}`)
    await new Promise((res) => setTimeout(res, 100))
  }
}

/** Resident memory of a process in MiB, from /proc (Linux only; undefined elsewhere or once it is gone). */
export function rssMiB(pid: number): number | undefined {
  const kb = statusField(pid, 'VmRSS')
  return kb === undefined ? undefined : kb / 1024
}

/** The threads of a process (its parse workers among them), from /proc; undefined elsewhere or once it is gone. */
export const threadCount = (pid: number): number | undefined => statusField(pid, 'Threads')

function statusField(pid: number, name: string): number | undefined {
  try {
    const v = new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]
    return v === undefined ? undefined : Number(v)
  } catch {
    return undefined
  }
}

/** Samples a process's RSS every `everyMs` until stopped; `stop` returns the highest sample in MiB. */
export function watchPeakRss(pid: number, everyMs = 250): { stop(): number | undefined } {
  let peak: number | undefined
  const sample = () => {
    const now = rssMiB(pid)
    if (now !== undefined && (peak === undefined || now > peak)) peak = now
  }
  sample()
  const timer = setInterval(sample, everyMs).unref()
  return {
    stop() {
      clearInterval(timer)
      sample()
      return peak
    },
  }
}

export { logLines, settledLogLines } from '../helpers/troupe.js'

/** How many times placement logged a change: with one host this must not move once the host is ready. */
export const partitionChanges = (lines: Array<Record<string, unknown>>) => lines.filter((l) => l.msg === 'partitions changed')

/** Warnings and errors (pino level 40 and up), summarised by message and error text, for the report. */
export function problemLines(lines: Array<Record<string, unknown>>): Map<string, number> {
  const counts = new Map<string, number>()
  for (const l of lines) {
    if (typeof l.level !== 'number' || l.level < 40) continue
    const err = l.err as { type?: string; message?: string } | undefined
    const key = `${String(l.msg)}${err ? `: ${err.type ?? ''} ${String(err.message ?? '').slice(0, 160)}` : ''}`
    counts.set(key, (counts.get(key) ?? 0) + 1)
  }
  return counts
}

/** A keyring of one fresh key, so that vault writes are served (not refused for want of one). */
function keyringFile(): string {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'troupe-fuzz-keyring-')), 'keyring.json')
  writeFileSync(file, JSON.stringify({ keys: [{ id: 'fuzz', key: randomBytes(32).toString('base64') }] }), { mode: 0o600 })
  return file
}

function adminKeyFile(): string {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'troupe-fuzz-admin-')), 'admin.key')
  writeFileSync(file, FUZZ_ADMIN_KEY, { mode: 0o600 })
  return file
}
