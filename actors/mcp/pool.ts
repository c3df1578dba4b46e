import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js'
import { DEFAULT_MCP_TIMINGS, McpConnection, type McpAuth, type McpTimings, NO_AUTH } from './connection.js'
import { egressFetch, type McpEgress, PUBLIC_ONLY } from './egress.js'

/** A server as an agent names it (`mcp_servers[]`). */
export interface McpServerRef {
  name: string
  url: string
}

/**
 * A session's MCP connections, one per server (name and URL), each opened at its first use and reused by every turn
 * and thread of the session until the session leaves memory (`close`: passivated, moved, stopped). A host that takes
 * the session over starts with none and connects again.
 */
export class McpPool {
  private readonly conns = new Map<string, McpConnection>()
  private closed = false

  constructor(
    private readonly auth: McpAuth = NO_AUTH,
    private readonly timings: McpTimings = DEFAULT_MCP_TIMINGS,
    private readonly fetch?: FetchLike,
  ) {}

  /** The connection to `server` (not yet open: it opens at its first use). */
  get(server: McpServerRef): McpConnection {
    const key = `${server.name}\n${server.url}`
    let c = this.conns.get(key)
    if (!c || this.closed) {
      c = new McpConnection(server.name, server.url, this.auth, this.timings, this.fetch)
      if (this.closed) void c.close()
      else this.conns.set(key, c)
    }
    return c
  }

  /** Closes the connections to servers not in `servers` (a session update changed its agent's servers). */
  async retain(servers: readonly McpServerRef[]): Promise<void> {
    const keep = new Set(servers.map((s) => `${s.name}\n${s.url}`))
    const gone = [...this.conns].filter(([k]) => !keep.has(k))
    for (const [k] of gone) this.conns.delete(k)
    await Promise.all(gone.map(([, c]) => c.close()))
  }

  /** Closes every connection; the pool opens none after. */
  async close(): Promise<void> {
    this.closed = true
    const all = [...this.conns.values()]
    this.conns.clear()
    await Promise.all(all.map((c) => c.close()))
  }
}

/** What a host's sessions share to make their pools: the credentials' source and the timings. */
export interface McpClients {
  /** A new pool for session `sessionId` (its `vault_ids` will choose the credentials: issue 43 point 2). */
  forSession(sessionId: string, vaultIds: readonly string[]): McpPool
}

/** What a host's `McpClients` are made of; each has its default. */
export interface McpClientOptions {
  /** Default `DEFAULT_MCP_TIMINGS`. */
  timings?: McpTimings
  /** The credentials for a session's vaults. Default none sent. */
  auth?: (vaultIds: readonly string[]) => McpAuth
  /** Where connections may go. Default public addresses only (`PUBLIC_ONLY`). */
  egress?: McpEgress
}

export function mcpClients(o: McpClientOptions = {}): McpClients {
  const auth = o.auth ?? (() => NO_AUTH)
  // One connection pool (undici's) for the host's MCP requests, its lookups checked.
  const fetch = egressFetch(o.egress ?? PUBLIC_ONLY)
  return { forSession: (_id, vaultIds) => new McpPool(auth(vaultIds), o.timings ?? DEFAULT_MCP_TIMINGS, fetch) }
}
