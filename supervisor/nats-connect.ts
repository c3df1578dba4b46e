import { connect, type ConnectionOptions, type NatsConnection } from '@nats-io/transport-node'
import net from 'node:net'

export interface ConnectNatsOptions {
  /** Client name shown in the server's connection list. Default `troupe`. */
  name?: string
  /** How long the first connection (TCP, the server's INFO, the handshake) may take. Default 3000 ms. */
  timeoutMs?: number
}

/** One server of a NATS URL, credentials taken out (nats.js ignores them in the URL). */
export interface NatsServerUrl {
  /** `nats://host:port`, as handed to the client. */
  url: string
  host: string
  port: number
  user?: string
  pass?: string
  token?: string
}

/** How long a failed handshake's diagnosis may look at what the port says. */
const PROBE_MS = 1000

/** How often the NATS connection pings its server. */
export const PING_INTERVAL_MS = 3000

/**
 * Connects to NATS, or fails within about `timeoutMs` + 1 s with a message that names the URL (password
 * hidden) and what to check. A connection that was once made reconnects for ever, 250 ms apart: a NATS
 * restart must not take the process down.
 */
export async function connectNats(url: string, opts: ConnectNatsOptions = {}): Promise<NatsConnection> {
  const timeout = opts.timeoutMs ?? 3000
  const servers = parseNatsUrl(url)
  const shown = redact(url)
  const first = servers[0]!
  const options: ConnectionOptions = {
    servers: servers.map((s) => s.url),
    name: opts.name ?? 'troupe',
    maxReconnectAttempts: -1,
    reconnectTimeWait: 250,
    // A server that stops answering without closing the connection (paused, cut off by the network) is noticed
    // after two unanswered pings, 6 to 9 s, and the client moves to another server of the cluster; the default
    // (2 min) would leave the host without heartbeats, and so out of service, for minutes.
    pingInterval: PING_INTERVAL_MS,
    maxPingOut: 2,
    timeout,
    // nats.js builds an Error per request up front, to give a timeout the caller's stack: 12.5 % of the request
    // path. Without it, a request's timeout or failure carries a stack inside the client, not the caller's; every
    // such error here is classified and answered by code (actors/kit/wire.ts), and logged with the request's rid.
    noAsyncTraces: true,
  }
  try {
    return await connect({ ...options, ...credentials(first) })
  } catch (err) {
    // nats.js 3.4 does not close the socket of a handshake that timed out (it stays until the peer closes it);
    // the processes that call this exit on failure, so that costs nothing here.
    throw new Error(await explain(err, shown, first, timeout), { cause: err })
  }
}

/** The credentials a server's URL carried, as nats.js takes them (it ignores them in the URL). */
export function credentials(server: NatsServerUrl): Pick<ConnectionOptions, 'user' | 'pass' | 'token'> {
  if (server.user !== undefined) return { user: server.user, pass: server.pass ?? '' }
  return server.token === undefined ? {} : { token: server.token }
}

/** `nats://[user:pass@]host[:port]`, `tls://…` or bare `host:port`; several comma-separated. */
export function parseNatsUrl(url: string): NatsServerUrl[] {
  const malformed = (why: string) =>
    new Error(`malformed NATS URL ${JSON.stringify(redact(url))}: ${why}; expected nats://host:port (several separated by commas)`)
  const parts = url
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)
  if (!parts.length) throw malformed('it is empty')
  return parts.map((part) => {
    let u: URL
    try {
      u = new URL(part.includes('://') ? part : `nats://${part}`)
    } catch {
      throw malformed(`${JSON.stringify(redact(part))} is not a URL`)
    }
    if (u.protocol !== 'nats:' && u.protocol !== 'tls:') throw malformed(`the scheme ${u.protocol}// is not nats:// or tls://`)
    if (!u.hostname) throw malformed('it names no host')
    if (u.pathname && u.pathname !== '/') throw malformed(`a NATS URL has no path (${u.pathname})`)
    const port = u.port ? Number(u.port) : 4222
    const server: NatsServerUrl = { url: `${u.protocol}//${u.host}`, host: u.hostname.replace(/^\[|\]$/g, ''), port }
    const user = decodeURIComponent(u.username)
    if (u.password) Object.assign(server, { user, pass: decodeURIComponent(u.password) })
    else if (user) server.token = user
    return server
  })
}

/** The URL as it may be printed: a password or token replaced by `***`. */
export function redact(url: string): string {
  return url.replace(
    /(\w+:\/\/)([^@/,]*)@/g,
    (_, scheme: string, cred: string) => `${scheme}${cred.includes(':') ? `${cred.slice(0, cred.indexOf(':'))}:***` : '***'}@`,
  )
}

async function explain(err: unknown, url: string, server: NatsServerUrl, timeout: number): Promise<string> {
  const e = err as Error & { code?: string; cause?: { code?: string } }
  const code = e.code ?? e.cause?.code
  const name = e.name ?? e.constructor?.name
  const where = `${server.host}:${server.port}`
  switch (code) {
    case 'ECONNREFUSED':
      return `nothing is listening at ${url}: is nats-server running? Check the host and port (\`troupe start\` without NATS_URL runs an embedded one)`
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_NONAME':
      return `cannot resolve host ${JSON.stringify(server.host)} of ${url} (${code}): check the host name, or use an IP address`
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return `cannot reach ${where} of ${url} (${code}): check the address and the network route to it`
  }
  if (name === 'AuthorizationError' || name === 'UserAuthenticationExpiredError') {
    return `${url} refused our credentials (${e.message}): put them in the URL, nats://user:password@host:port or nats://token@host:port`
  }
  if (name === 'TimeoutError' || name === 'ProtocolError' || /unexpected response|undefined error/.test(e.message)) {
    const seen = await probe(server.host, server.port)
    if (!seen.connected) return `no answer from ${url} within ${timeout} ms: check the host, the port and any firewall between`
    if (seen.greeting.startsWith('INFO ')) {
      return `a NATS server answered at ${url} but the handshake did not finish within ${timeout} ms (${e.message}): does it require TLS (tls://…) or is it overloaded?`
    }
    const said = seen.greeting ? `it said ${JSON.stringify(seen.greeting.split(/\r?\n/)[0]!.slice(0, 60))}` : 'it sent no NATS greeting'
    return `${url} answered but is not a NATS server (${said}): check the port (NATS listens on 4222 by default)`
  }
  return `cannot connect to NATS at ${url}: ${e.message}`
}

/** Connects to the port and reads what it says first: a NATS server greets every client with `INFO {…}`. */
function probe(host: string, port: number): Promise<{ connected: boolean; greeting: string }> {
  return new Promise((resolve) => {
    let connected = false
    let greeting = ''
    const socket = net.connect({ host, port })
    const done = () => {
      clearTimeout(timer)
      socket.destroy()
      resolve({ connected, greeting })
    }
    const timer = setTimeout(done, PROBE_MS)
    socket.on('connect', () => (connected = true))
    socket.on('data', (d) => {
      greeting += d.toString('latin1')
      if (greeting.includes('\n') || greeting.length > 200) done()
    })
    socket.on('error', done)
    socket.on('close', done)
  })
}
