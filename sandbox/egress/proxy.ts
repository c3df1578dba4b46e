import { lookup as dnsLookup, type LookupAddress } from 'node:dns'
import { chmod, rm } from 'node:fs/promises'
import type { Server } from 'node:http'
import { createServer as createNetServer, isIP, type Server as NetServer, type Socket } from 'node:net'
// The vendor's sandbox runtime (@anthropic-ai/sandbox-runtime) exports only its process-wide SandboxManager; its
// proxy and its resolved-address guard are what we take from it, from their modules (pinned version, no exports map).
import { createHttpProxyServer } from '@anthropic-ai/sandbox-runtime/dist/sandbox/http-proxy.js'
import { canonicalizeHost } from '@anthropic-ai/sandbox-runtime/dist/sandbox/parent-proxy.js'
import { createResolvedAddressGuard, ResolvedAddressDeniedError } from '@anthropic-ai/sandbox-runtime/dist/sandbox/resolved-address-guard.js'
import type { DescriptorGate } from './descriptors.js'
import { type EgressPolicy, policyAllows } from './policy.js'
import { bodyPairs, type EgressSecret, injectHeaders, secretsReach } from './secrets.js'
import type { Interception } from './tls.js'

/** The operator's egress settings, shared by every sandbox of this server. */
export interface EgressSettings {
  /**
   * `TROUPE_SANDBOX_EGRESS_ALLOW`: addresses (`10.0.0.5`, `127.0.0.1:8080`, `[::1]:9000`, a CIDR range) a sandbox may
   * reach although they are loopback, link-local or this host's own; default none. For an intranet service on the
   * host, or a test server. A limited policy must still name the host.
   */
  allowAddresses: readonly string[]
  /**
   * `TROUPE_SANDBOX_CONNECTIONS`: connections one sandbox may have open through its proxy at once; default 256. Past
   * it a new one is answered 503 and closed.
   */
  connections: number
  /**
   * `TROUPE_FD_RESERVE`: file descriptors the server keeps for itself, which no sandbox's connections may take;
   * default a quarter of its limit, at least 1,024 or half of it (descriptors.ts).
   */
  descriptorReserve?: number
  /**
   * `TROUPE_SANDBOX_EGRESS_CA_FILE`: a PEM file of certificates the egress proxy trusts, beside node's roots, when it
   * opens the real HTTPS connection for a request it put a secret into (an intranet CA; a test server's own
   * certificate). Default none.
   */
  upstreamCaFile?: string
}

/** A connection's refusal: an HTTP answer the sandbox's client can show, then the socket goes. */
function refuse(socket: Socket, why: string): void {
  const body = `troupe egress proxy: connection refused: ${why}\n`
  socket.on('error', () => socket.destroy())
  socket.end(
    `HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\nconnection: close\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    () => socket.destroy(),
  )
  setTimeout(() => socket.destroy(), 1_000).unref()
}

/** A name that is never an address nor a loopback name, under which the guard judges an address by itself. */
const AS_ADDRESS = 'address.invalid'

/**
 * Judges destination addresses: the guard of the vendor's runtime (loopback, unspecified, link-local, multicast,
 * broadcast, cloud metadata addresses, this host's interface addresses, and IPv6 forms carrying any of those as an
 * IPv4 address), with the operator's exceptions. Used for literals in requests and for every address a name
 * resolves to, so `localhost`, a name pointing at 127.0.0.1 and `0x7f.1` are all the same refusal.
 */
export class AddressJudge {
  private readonly guard: ReturnType<typeof createResolvedAddressGuard>

  constructor(settings: Pick<EgressSettings, 'allowAddresses'>) {
    this.guard = createResolvedAddressGuard({ allowedDomains: [...settings.allowAddresses] })
  }

  permits(address: string, port: number): boolean {
    return this.guard.permits(AS_ADDRESS, address, port)
  }

  /** A `dns.lookup` for dials to `port` that keeps only the addresses `permits` allows, so the one dialed was checked. */
  lookupFor(port: number) {
    return (hostname: string, options: object, callback: (err: Error | null, address: string | LookupAddress[], family?: number) => void) => {
      dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
        if (err) return callback(err, [])
        const kept = addresses.filter((a) => this.permits(a.address, port))
        if (kept.length === 0) {
          const reason = addresses.length ? 'resolved to an address the sandbox may not reach' : 'resolved to nothing'
          return callback(
            new ResolvedAddressDeniedError(
              hostname,
              reason,
              addresses.map((a) => a.address),
            ),
            [],
          )
        }
        if ((options as { all?: boolean }).all) return callback(null, kept)
        callback(null, kept[0]!.address, kept[0]!.family)
      })
    }
  }
}

/**
 * One sandbox's way out: an HTTP proxy (CONNECT tunnels and absolute-URI requests) on a Unix socket that only that
 * sandbox sees. It admits a destination when the policy names its host and, for an address literal, when the judge
 * permits the address; a name is resolved here and dialed only at an address the judge permits (re-checked on every
 * dial, so DNS cannot point an allowed name at the host's NATS). `policy` can change while it runs (a session
 * update changed the agent's MCP servers); the next connection sees the change.
 *
 * `secrets` (secrets.ts) are put in place of their placeholders in requests to their hosts: plain HTTP as it passes,
 * HTTPS by ending the sandbox's TLS here with a certificate for the host signed by the server's CA (tls.ts), which a
 * sandbox with secrets trusts, and opening a TLS connection of its own to the real host, whose certificate is checked.
 * A CONNECT to any other host stays an opaque tunnel, and so does one that does not start with a TLS handshake.
 */
export class EgressProxy {
  private readonly listener: NetServer
  /** The sandbox's ends of the connections open now (a CONNECT tunnel's too, which its HTTP server no longer tracks). */
  private readonly conns = new Set<Socket>()

  private constructor(
    private readonly server: Server,
    private readonly socket: string,
    public policy: EgressPolicy,
    private readonly limits: { connections: number; gate: DescriptorGate },
    /** The secrets put into requests; changed in place by the sandbox (a vault's credential rotated or archived). */
    public secrets: readonly EgressSecret[],
  ) {
    // The proxy's HTTP server never listens itself: each connection is admitted here first, then handed to it.
    this.listener = createNetServer((conn) => this.admit(conn))
  }

  /**
   * Starts a proxy for one sandbox on the Unix socket `socket` (which must not exist; at most 107 bytes, the kernel's
   * bound), connectable by any uid: its directory decides who sees it. It holds at most `connections` at once, each
   * taken from the process's `gate`. `tls` gives the interception CA, for a sandbox made with secrets (which trusts it).
   */
  static async open(
    socket: string,
    policy: EgressPolicy,
    judge: AddressJudge,
    limits: { connections: number; gate: DescriptorGate },
    secrets: readonly EgressSecret[] = [],
    tls?: () => Interception,
  ): Promise<EgressProxy> {
    let proxy: EgressProxy | undefined
    const secretsNow = () => proxy?.secrets ?? []
    const server = createHttpProxyServer({
      async filter(port, host) {
        const canonical = canonicalizeHost(host)
        const allowed = canonical !== undefined && policyAllows(proxy!.policy, canonical) && (isIP(canonical) === 0 || judge.permits(canonical, port))
        // A connection to a secret's host is read with a leaf for it: minted off the event loop first (leaves.ts).
        if (allowed && tls && secretsReach(secretsNow(), canonical))
          await tls()
            .leaves.ready(canonical)
            .catch(() => undefined)
        return allowed
      },
      lookupFor: (port) => judge.lookupFor(port),
      // Only a sandbox made with secrets trusts the CA (its bundle is bound in when it starts), and only their hosts'
      // connections are read (`shouldTerminateTLS`); the CA is made at the first such sandbox's first connection.
      get mitmCA() {
        return tls?.().ca
      },
      get tlsTerminateUpstreamCA() {
        return tls?.().upstreamCa
      },
      shouldTerminateTLS: (host) => secretsReach(secretsNow(), host),
      mutateHeaders: (headers, host) => injectHeaders(secretsNow(), headers, host),
      mutateHeadersPlaintext: (headers, host) => injectHeaders(secretsNow(), headers, host),
      getBodySubstitutions: (host) => bodyPairs(secretsNow(), host),
      getBodySubstitutionsPlaintext: (host) => bodyPairs(secretsNow(), host),
    })
    proxy = new EgressProxy(server, socket, policy, limits, secrets)
    const listener = proxy.listener
    try {
      await new Promise<void>((resolve, reject) => {
        listener.once('error', reject)
        listener.listen(socket, () => {
          listener.off('error', reject)
          resolve()
        })
      })
      await chmod(socket, 0o666)
    } catch (err) {
      await proxy.close()
      throw err
    }
    return proxy
  }

  /** Connections open through this proxy now. */
  get connections(): number {
    return this.conns.size
  }

  private admit(conn: Socket): void {
    const refused =
      this.conns.size >= this.limits.connections
        ? `this sandbox already has ${this.conns.size} connections open, its limit (TROUPE_SANDBOX_CONNECTIONS)`
        : this.limits.gate.take()
    if (refused) {
      refuse(conn, refused)
      return
    }
    this.conns.add(conn)
    conn.once('close', () => {
      this.conns.delete(conn)
      this.limits.gate.release()
    })
    this.server.emit('connection', conn)
  }

  async close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.listener.close(() => resolve()))
    for (const conn of this.conns) conn.destroy()
    this.server.close()
    await closed
    await rm(this.socket, { force: true })
  }
}
