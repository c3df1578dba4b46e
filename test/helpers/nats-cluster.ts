// A JetStream cluster of real nats-server processes on free loopback ports, for tests and the chaos run that need
// to lose a server: each node has its own store directory, config file and fixed ports (chosen once, so a
// restarted node rejoins under the same address and the routes and client URL lists stay valid).
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { connect, type NatsConnection } from '@nats-io/transport-node'
import { jetstreamManager } from '@nats-io/jetstream'
import { createServer } from 'node:net'
import { natsServerBinary } from '../../supervisor/nats-server.js'

export interface ClusterNode {
  /** `server_name`: n1, n2, … */
  name: string
  /** `nats://127.0.0.1:<port>` */
  url: string
  /** `http://127.0.0.1:<port>` (`/varz`, `/jsz`, `/connz`). */
  monitorUrl: string
  /** The nats-server's pid while it runs (not the watchdog's). */
  pid(): number | undefined
  state(): 'running' | 'stopped' | 'dead'
  /** SIGKILL and wait for the process to be gone. */
  kill(): Promise<void>
  /** Starts the node again on the same ports and store; resolves once it accepts client connections. */
  restart(): Promise<void>
  /** SIGSTOP: the process holds its sockets but answers nothing (a stand-in for a network partition). */
  pause(): void
  /** SIGCONT after `pause`. */
  resume(): void
  /** The last MB the server wrote (its log goes to stderr), across restarts. */
  log(): string
}

export interface NatsCluster {
  /** The cluster name every node shares. */
  name: string
  nodes: ClusterNode[]
  /** Every node's client URL, comma-separated: what `NATS_URL` and nats.js `servers` accept. */
  url: string
  node(name: string): ClusterNode
  /** The JetStream meta leader's server name, as the first running node that answers `/jsz` reports it. */
  metaLeader(): Promise<string | undefined>
  /** The server name leading a stream's raft group (`undefined` while it has none or the API does not answer). */
  streamLeader(stream: string): Promise<string | undefined>
  /** Resolves once a meta leader is elected and the JetStream API answers through the cluster. */
  waitReady(timeoutMs?: number): Promise<void>
  /**
   * Resolves once, for `stableMs` without a break, every running node names the same meta leader, the JetStream
   * API answers and each of `streams` has a leader. A node resumed from SIGSTOP can start an election a moment
   * after everything looked fine, which `waitReady` would miss.
   */
  waitStable(opts?: { streams?: string[]; stableMs?: number; timeoutMs?: number }): Promise<void>
  /** Kills every node and removes the stores. */
  stop(): Promise<void>
  /** The same, synchronously, for exit handlers. */
  stopNow(): void
}

export interface ClusterOptions {
  size?: number
  /** Default `troupe-test`. */
  name?: string
  /** Parent directory for the stores and configs; default a new temporary directory, removed on stop. */
  dir?: string
}

/**
 * Runs nats-server ($0 and its arguments), prints its pid, and SIGKILLs it once stdin reaches end of file:
 * when we close it, or when we die in any way, so no server outlives the process that started it. `wait`
 * returns only when the server exits, not when it is stopped, so SIGSTOP leaves the watchdog waiting.
 */
const WATCHDOG = `exec 3<&0
"$0" "$@" &
server=$!
echo "pid $server"
( read -r _ <&3; kill -KILL "$server" 2>/dev/null ) &
watcher=$!
wait "$server"
status=$?
kill "$watcher" 2>/dev/null
exit $status`

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

interface Ports {
  client: number
  route: number
  monitor: number
}

function configFor(name: string, cluster: string, ports: Ports, routes: number[], storeDir: string): string {
  // No `sync_interval: always` (nats.conf has it): Debian's 2.9 refuses it, and the faults here kill processes,
  // not the OS, so the page cache keeps what was acknowledged.
  return `server_name: ${name}
listen: 127.0.0.1:${ports.client}
http: 127.0.0.1:${ports.monitor}
max_payload: 64MB
max_pending: 256MB
# A peer that stops answering (paused, cut off) is dropped after about 3 s rather than the default 4 minutes.
ping_interval: "1s"
ping_max: 3
jetstream {
  store_dir: "${storeDir}"
  max_memory_store: 256MB
  max_file_store: 2GB
}
cluster {
  name: ${cluster}
  listen: 127.0.0.1:${ports.route}
  routes: [${routes.map((p) => `nats-route://127.0.0.1:${p}`).join(', ')}]
}
`
}

/** Where cluster ports are drawn from: below Linux's default ephemeral range, above well-known services. */
const STABLE_PORTS_FROM = 20_000
const STABLE_PORTS = 12_000

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer()
    s.unref()
    s.once('error', () => resolve(false))
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)))
  })
}

async function canConnect(url: string): Promise<boolean> {
  try {
    const nc = await connect({ servers: url, timeout: 500, reconnect: false })
    await nc.close()
    return true
  } catch {
    return false
  }
}

async function getJson(url: string, timeoutMs = 1000): Promise<any> {
  const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) })
  if (!res.ok) throw new Error(`${url}: ${res.status}`)
  return res.json()
}

class Node implements ClusterNode {
  private child: ChildProcess | undefined
  private serverPid: number | undefined
  private paused = false
  private stderr = ''

  constructor(
    readonly name: string,
    private readonly bin: string,
    private readonly conf: string,
    readonly ports: Ports,
  ) {}

  get url() {
    return `nats://127.0.0.1:${this.ports.client}`
  }
  get monitorUrl() {
    return `http://127.0.0.1:${this.ports.monitor}`
  }
  pid() {
    return this.serverPid
  }
  state() {
    if (!this.child || this.child.exitCode !== null || this.child.signalCode !== null) return 'dead' as const
    return this.paused ? ('stopped' as const) : ('running' as const)
  }
  log() {
    return this.stderr
  }

  /** Spawns the watchdog and server; resolves with the server's pid. */
  async spawn(): Promise<void> {
    // Its own process group: a Ctrl-C at the terminal reaches the driver, which then kills the nodes itself.
    const child = spawn('/bin/sh', ['-c', WATCHDOG, this.bin, '-c', this.conf], { stdio: ['pipe', 'pipe', 'pipe'], detached: true })
    this.child = child
    this.paused = false
    child.stderr!.on('data', (d) => (this.stderr = (this.stderr + d).slice(-1_000_000)))
    this.serverPid = await new Promise<number>((resolve, reject) => {
      let out = ''
      child.stdout!.on('data', (d) => {
        out += d
        const m = /pid (\d+)/.exec(out)
        if (m) resolve(Number(m[1]))
      })
      child.once('exit', (code) => reject(new Error(`${this.name}: watchdog exited (${code}) before starting nats-server\n${this.stderr}`)))
    })
    // Holding the driver's event loop open is the driver's business, not the cluster's.
    child.unref()
    for (const s of [child.stdout, child.stderr, child.stdin] as unknown as Array<{ unref?: () => void }>) s?.unref?.()
  }

  async waitAccepting(timeoutMs = 15_000): Promise<void> {
    const deadline = Date.now() + timeoutMs
    while (Date.now() < deadline) {
      if (this.state() === 'dead') throw new Error(`${this.name} exited:\n${this.stderr}`)
      if (await canConnect(this.url)) return
      await sleep(100)
    }
    throw new Error(`${this.name} did not accept connections within ${timeoutMs} ms:\n${this.stderr}`)
  }

  async kill(): Promise<void> {
    const child = this.child
    if (!child || this.state() === 'dead') return
    const exited = new Promise<void>((r) => child.once('exit', () => r()))
    if (this.serverPid) signal(this.serverPid, 'SIGKILL')
    await Promise.race([exited, sleep(5000)])
    this.serverPid = undefined
    this.paused = false
  }

  async restart(): Promise<void> {
    if (this.state() !== 'dead') await this.kill()
    await this.spawn()
    await this.waitAccepting()
  }

  pause() {
    if (this.serverPid && this.state() === 'running') {
      signal(this.serverPid, 'SIGSTOP')
      this.paused = true
    }
  }

  resume() {
    if (this.serverPid && this.paused) {
      signal(this.serverPid, 'SIGCONT')
      this.paused = false
    }
  }

  killNow() {
    if (this.serverPid) {
      signal(this.serverPid, 'SIGCONT')
      signal(this.serverPid, 'SIGKILL')
    }
    // Closing stdin is the watchdog's cue; it exits with the server.
    this.child?.stdin?.destroy()
  }
}

function signal(pid: number, sig: NodeJS.Signals) {
  try {
    process.kill(pid, sig)
  } catch {}
}

/** Starts `size` (default 3) clustered nodes named n1…nN and waits until JetStream answers through them. */
export async function startNatsCluster(opts: ClusterOptions = {}): Promise<NatsCluster> {
  const size = opts.size ?? 3
  const name = opts.name ?? 'troupe-test'
  const bin = natsServerBinary()
  const ownDir = !opts.dir
  const dir = opts.dir ?? mkdtempSync(path.join(tmpdir(), 'troupe-cluster-'))
  mkdirSync(dir, { recursive: true })
  const ports: Ports[] = []
  const taken = new Set<number>()
  // A node restarts on the ports it had, so they are drawn below the kernel's ephemeral range (32768 and up on
  // Linux): a port a killed node left is then never handed to another process's `listen(0)` or outgoing
  // connection (another test running beside this one) before the node takes it back.
  const fresh = async () => {
    for (;;) {
      const p = STABLE_PORTS_FROM + Math.floor(Math.random() * STABLE_PORTS)
      if (!taken.has(p) && (await isFree(p))) {
        taken.add(p)
        return p
      }
    }
  }
  for (let i = 0; i < size; i++) ports.push({ client: await fresh(), route: await fresh(), monitor: await fresh() })
  const nodes = ports.map((p, i) => {
    const nodeName = `n${i + 1}`
    const nodeDir = path.join(dir, nodeName)
    mkdirSync(nodeDir, { recursive: true })
    const conf = path.join(nodeDir, 'nats.conf')
    const routes = ports.filter((_, j) => j !== i).map((q) => q.route)
    writeFileSync(conf, configFor(nodeName, name, p, routes, path.join(nodeDir, 'jetstream')))
    return new Node(nodeName, bin, conf, p)
  })

  let stopped = false
  const stopNow = () => {
    if (stopped) return
    stopped = true
    for (const n of nodes) n.killNow()
    if (ownDir) rmSync(dir, { recursive: true, force: true })
  }

  const metaLeader = async (): Promise<string | undefined> => {
    for (const n of nodes) {
      if (n.state() !== 'running') continue
      try {
        const jsz = await getJson(`${n.monitorUrl}/jsz`)
        const leader = jsz?.meta_cluster?.leader
        if (typeof leader === 'string' && leader) return leader
      } catch {}
    }
    return undefined
  }

  // One connection for leader look-ups, made lazily: it must not exist before the nodes do.
  let nc: NatsConnection | undefined
  const conn = async () =>
    (nc ??= await connect({ servers: nodes.map((n) => n.url), maxReconnectAttempts: -1, reconnectTimeWait: 250, name: 'nats-cluster-helper' }))

  const streamLeader = async (stream: string): Promise<string | undefined> => {
    try {
      const jsm = await jetstreamManager(await conn(), { timeout: 2000 })
      const info = await jsm.streams.info(stream)
      return info.cluster?.leader || undefined
    } catch {
      return undefined
    }
  }

  const waitReady = async (timeoutMs = 30_000) => {
    const deadline = Date.now() + timeoutMs
    let last = 'no meta leader'
    while (Date.now() < deadline) {
      if (await metaLeader()) {
        try {
          const jsm = await jetstreamManager(await conn(), { timeout: 2000 })
          await jsm.getAccountInfo()
          return
        } catch (err) {
          last = (err as Error).message
        }
      }
      await sleep(200)
    }
    throw new Error(`the NATS cluster was not ready within ${timeoutMs} ms (${last})`)
  }

  const waitStable = async (o: { streams?: string[]; stableMs?: number; timeoutMs?: number } = {}) => {
    const stableMs = o.stableMs ?? 3000
    const deadline = Date.now() + (o.timeoutMs ?? 60_000)
    let since: number | undefined
    let last = ''
    while (Date.now() < deadline) {
      let why = ''
      const running = nodes.filter((n) => n.state() === 'running')
      const leaders = await Promise.all(
        running.map((n) =>
          getJson(`${n.monitorUrl}/jsz`).then(
            (j) => String(j?.meta_cluster?.leader ?? ''),
            () => '',
          ),
        ),
      )
      if (!leaders[0] || leaders.some((l) => l !== leaders[0])) why = `meta leaders ${JSON.stringify(leaders)}`
      if (!why) {
        try {
          const jsm = await jetstreamManager(await conn(), { timeout: 2000 })
          await jsm.getAccountInfo()
        } catch (err) {
          why = (err as Error).message
        }
      }
      for (const st of o.streams ?? []) if (!why && !(await streamLeader(st))) why = `no leader for ${st}`
      if (why) {
        since = undefined
        last = why
      } else {
        since ??= Date.now()
        if (Date.now() - since >= stableMs) return
      }
      await sleep(500)
    }
    throw new Error(`the NATS cluster did not stay stable for ${stableMs} ms (${last})`)
  }

  try {
    for (const n of nodes) await n.spawn()
    await Promise.all(nodes.map((n) => n.waitAccepting()))
    await waitReady()
  } catch (err) {
    stopNow()
    throw err
  }

  return {
    name,
    nodes,
    url: nodes.map((n) => n.url).join(','),
    node(nodeName) {
      const n = nodes.find((x) => x.name === nodeName)
      if (!n) throw new Error(`no node ${nodeName} in the cluster`)
      return n
    },
    metaLeader,
    streamLeader,
    waitReady,
    waitStable,
    async stop() {
      await nc?.close().catch(() => undefined)
      nc = undefined
      await Promise.all(nodes.map((n) => n.kill()))
      stopNow()
    },
    stopNow,
  }
}
