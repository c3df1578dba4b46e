import { spawn, execFileSync, type ChildProcess, type StdioOptions } from 'node:child_process'
import { createServer } from 'node:net'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { connect } from '@nats-io/transport-node'

const here = path.dirname(fileURLToPath(import.meta.url))
/** nats.conf at the package root: one level up from supervisor/, two from its compiled copy in dist/supervisor/. */
export const NATS_CONF = path.resolve(here, existsSync(path.resolve(here, '..', 'nats.conf')) ? '..' : '../..', 'nats.conf')

/** Oldest nats-server we run on: Debian bookworm's. Newer-only features (per-key TTL, several filter subjects) are not used. */
export const MIN_NATS_SERVER = [2, 9, 0]

export interface EmbeddedNats {
  /** Where this process connects. */
  url: string
  /** Where other processes join it: this machine's name when it listens on every interface, else `url`. */
  joinUrl: string
  port: number
  /** The monitoring endpoint (`/varz`, `/jsz`, …), on loopback. */
  monitorUrl: string
  /** The process group of the server and its watchdog (recorded in the data directory's lock). */
  pgid: number
  stop(): Promise<void>
  /** Stops the server process from keeping this process alive (tests, which stop it in a teardown). */
  unref(): void
  /** SIGKILL without waiting: for synchronous teardown at process exit. */
  killNow(): void
}

export function natsServerBinary(): string {
  for (const candidate of [process.env.NATS_SERVER_BIN, 'nats-server', '/usr/sbin/nats-server', '/usr/bin/nats-server']) {
    if (!candidate) continue
    try {
      execFileSync(candidate, ['--version'], { stdio: 'pipe' })
      return candidate
    } catch {}
  }
  throw new Error(
    'nats-server was not found. On Debian or Ubuntu: sudo apt-get install -y nats-server ' + '(or point NATS_URL at a running NATS with JetStream).',
  )
}

/** A free port on `host` (default loopback): never assume 4222, machines often run a NATS there already. */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  return (await bind(0, host))!
}

/** Binds `port` on `host` and lets it go: the port bound, or undefined when it is in use. */
function bind(port: number, host: string): Promise<number | undefined> {
  return new Promise((resolve, reject) => {
    const s = createServer()
    s.unref()
    s.on('error', (err: NodeJS.ErrnoException) => (err.code === 'EADDRINUSE' ? resolve(undefined) : reject(err)))
    s.listen(port, host, () => {
      const bound = (s.address() as { port: number }).port
      s.close(() => resolve(bound))
    })
  })
}

export interface EmbeddedNatsOptions {
  /** The configuration file. Default: nats.conf at the package root. */
  conf?: string
  /** The interface clients connect on. Default 127.0.0.1: nothing outside this machine reaches the server. */
  host?: string
  /** The client port, exactly: a port in use fails the start, saying so. Default: see `portFile`, else a free port. */
  port?: number
  /**
   * A file keeping the client port across restarts: the port it names is used again while it is free (so processes
   * joined to this server find it after a restart), a free one otherwise (with a warning), and the one used is
   * written back. Default: none.
   */
  portFile?: string
  /**
   * A descriptor the server inherits and keeps open for as long as it runs (the data directory's lock, so the
   * directory stays locked until the server is gone, even when this process dies first). Default: none.
   */
  holdFd?: number
}

/** Starts nats-server from nats.conf with JetStream under `storeDir`, waits until it accepts connections. */
export async function startEmbeddedNats(storeDir: string, onWarning: (msg: string) => void, opts: EmbeddedNatsOptions = {}): Promise<EmbeddedNats> {
  const bin = natsServerBinary()
  const host = opts.host ?? '127.0.0.1'
  mkdirSync(storeDir, { recursive: true })
  const conf = configForVersion(opts.conf ?? NATS_CONF, binaryVersion(bin), storeDir, onWarning)
  const kept = opts.port === undefined && opts.portFile ? readPort(opts.portFile) : undefined
  for (let attempt = 0; ; attempt++) {
    const port = await clientPort(host, opts.port ?? (attempt === 0 ? kept : undefined), opts.port !== undefined)
    if (kept !== undefined && attempt === 0 && port !== kept) {
      onWarning(
        `the embedded nats-server's port of the last run, ${kept}, is in use: it listens on ${port} now; processes joined to the old port must be given the new URL (TROUPE_NATS_PORT fixes the port)`,
      )
    }
    const monitorPort = await freePort()
    const args = ['-c', conf, '-a', host, '-p', String(port), '-m', String(monitorPort), '-sd', storeDir]
    // Its own process group, so a Ctrl-C at the terminal reaches only us and we stop the server last; the
    // watchdog stops it when our end of its stdin closes, which also happens when we are SIGKILLed.
    // fd 3 is the watchdog's copy of stdin; the held descriptor goes on fd 4, which the server inherits.
    const stdio: StdioOptions = ['pipe', 'ignore', 'pipe', 'ignore', ...(opts.holdFd === undefined ? [] : [opts.holdFd])]
    const child = spawn('/bin/sh', ['-c', WATCHDOG, bin, ...args], { stdio, detached: true })
    let stderr = ''
    child.stderr!.on('data', (d) => (stderr = (stderr + d).slice(-4000)))
    const url = `nats://${WILDCARD.includes(host) ? '127.0.0.1' : bracketed(host)}:${port}`
    try {
      await waitForNats(url, child)
      if (opts.portFile) writeFileSync(opts.portFile, `${port}\n`)
      return {
        url,
        joinUrl: WILDCARD.includes(host) ? `nats://${os.hostname()}:${port}` : url,
        port,
        monitorUrl: `http://127.0.0.1:${monitorPort}`,
        pgid: child.pid!,
        stop: () => stopChild(child),
        killNow: () => killGroup(child, 'SIGKILL'),
        unref: () => {
          child.unref()
          for (const s of [child.stderr, child.stdin] as unknown as Array<{ unref?: () => void }>) s?.unref?.()
        },
      }
    } catch (err) {
      await stopChild(child)
      // Another process may have taken the port between our probe and the bind: try another (unless it was given).
      if (attempt < 3 && opts.port === undefined) continue
      throw new Error(`nats-server did not start: ${(err as Error).message}\n${stderr}`)
    }
  }
}

/** `wanted` when it is free; else a free port, or, when `wanted` was required, an error saying who to ask. */
async function clientPort(host: string, wanted: number | undefined, required: boolean): Promise<number> {
  if (wanted !== undefined && (await bind(wanted, host)) !== undefined) return wanted
  if (required) throw new Error(`port ${wanted} on ${host} is in use: stop what listens there (ss -ltnp 'sport = :${wanted}' names it), or choose another port`)
  return freePort(host)
}

function readPort(file: string): number | undefined {
  try {
    const port = Number(readFileSync(file, 'utf8').trim())
    return Number.isInteger(port) && port > 0 && port <= 65535 ? port : undefined
  } catch {
    return undefined
  }
}

/** Addresses that mean every interface: this process reaches the server on loopback. */
const WILDCARD = ['0.0.0.0', '::', '']
const bracketed = (host: string) => (host.includes(':') ? `[${host}]` : host)

async function waitForNats(url: string, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + 15_000
  let exited = false
  child.once('exit', () => (exited = true))
  while (Date.now() < deadline) {
    if (exited) throw new Error('nats-server exited')
    try {
      const nc = await connect({ servers: url, timeout: 500, reconnect: false })
      await nc.close()
      return
    } catch {
      await new Promise((r) => setTimeout(r, 100))
    }
  }
  throw new Error('timed out waiting for nats-server')
}

/**
 * Runs nats-server ($0 with its arguments) and stops it with SIGTERM once stdin reaches end of file: when
 * we close it, or when we die in any way. A background job's stdin is /dev/null, hence the copy on fd 3.
 */
const WATCHDOG = `exec 3<&0
"$0" "$@" &
server=$!
( read -r _ <&3; kill -TERM "$server" 2>/dev/null ) &
watcher=$!
wait "$server"
status=$?
kill "$watcher" 2>/dev/null
exit $status`

function killGroup(child: ChildProcess, signal: NodeJS.Signals) {
  try {
    process.kill(-child.pid!, signal)
  } catch {}
}

function stopChild(child: ChildProcess): Promise<void> {
  child.ref()
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
  return new Promise((resolve) => {
    const t = setTimeout(() => killGroup(child, 'SIGKILL'), 5000)
    child.once('exit', () => {
      clearTimeout(t)
      resolve()
    })
    child.stdin!.end()
  })
}

export function binaryVersion(bin: string): string {
  const out = execFileSync(bin, ['--version'], { encoding: 'utf8' })
  return /v?(\d+\.\d+\.\d+)/.exec(out)?.[1] ?? '0.0.0'
}

const atLeast = (version: string, want: number[]) => {
  const parts = version.split('.').map(Number)
  for (let i = 0; i < want.length; i++) if ((parts[i] ?? 0) !== want[i]) return (parts[i] ?? 0) > want[i]!
  return true
}

/**
 * nats-server before 2.10 (Debian bookworm ships 2.9.10) rejects `sync_interval` as an unknown field. We
 * keep the durable setting in nats.conf for servers that know it, and for older ones run a copy without
 * it, saying loudly that writes are then flushed on the server's own schedule.
 */
function configForVersion(conf: string, version: string, storeDir: string, onWarning: (msg: string) => void): string {
  if (atLeast(version, [2, 10, 0])) return conf
  const text = readFileSync(conf, 'utf8')
  if (!/^\s*sync_interval\s*:/m.test(text)) return conf
  const copy = path.join(storeDir, 'nats.effective.conf')
  writeFileSync(copy, text.replace(/^(\s*)sync_interval\s*:.*$/m, `$1# sync_interval dropped: nats-server ${version} does not support it`))
  onWarning(`nats-server ${version} does not support sync_interval: always (2.10+ does); acknowledged writes may be lost on an OS crash`)
  return copy
}

/** Parses `nats-server: v2.9.10` style versions out of the server's INFO. */
export function checkServerVersion(version: string): void {
  const parts = version.replace(/^v/, '').split(/[.-]/).map(Number)
  for (let i = 0; i < 3; i++) {
    const have = parts[i] ?? 0
    const need = MIN_NATS_SERVER[i]!
    if (have > need) return
    if (have < need) throw new Error(`nats-server ${version} is too old: Troupe needs ${MIN_NATS_SERVER.join('.')} or newer`)
  }
}
