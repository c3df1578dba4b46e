import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { FetchLike, Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import { McpError } from '@modelcontextprotocol/sdk/types.js'
import type { ToolResultContent } from '../../protocol/session-events.js'
import { type McpBlock, toResultContent } from './content.js'
import { capBody, MAX_RESPONSE_BYTES } from './egress.js'
import { classify, httpStatus, McpFailure } from './failure.js'
import { MAX_LIST_PAGES, ToolList } from './tool-list.js'

/** One tool a server lists: what the model is offered of it. */
export interface McpTool {
  name: string
  description?: string
  inputSchema: Record<string, unknown>
}

/** A `tools/call`'s result, as a tool result of the session's. */
export interface McpResult {
  content: ToolResultContent[]
  is_error: boolean
}

/** What an MCP request to a server sends besides the protocol: the headers its credential gives (issue 43 point 2). */
export interface McpAuth {
  /** The headers for server URL `url` (`Authorization: Bearer …`), or none. Asked at each connect. */
  headers(url: string): Promise<Record<string, string>>
}

export const NO_AUTH: McpAuth = { headers: async () => ({}) }

/** How long an MCP connection may take, and a call. */
export interface McpTimings {
  /** Connecting and listing: past it the server counts as unreachable for the turn. */
  connectMs: number
  /** One `tools/call` (progress notifications restart it). */
  callMs: number
  /** The most bytes one response may carry (egress.ts). Default `MAX_RESPONSE_BYTES`. */
  maxResponseBytes?: number
}

export const DEFAULT_MCP_TIMINGS: McpTimings = { connectMs: 10_000, callMs: 300_000 }

/**
 * A session's connection to one MCP server (`@modelcontextprotocol/sdk`): opened at first use, streamable HTTP first and
 * the deprecated HTTP+SSE transport when the server answers the streamable POST with another 4xx than 401/403 (a server
 * that offers only SSE); kept for later turns; its tool list cached until the server says it changed
 * (`notifications/tools/list_changed`). A connection that closes or fails is opened again at its next use.
 */
export class McpConnection {
  private client: Client | undefined
  /** The open client's streamable HTTP transport, whose MCP session `close` ends on the server (none for SSE). */
  private streamable: StreamableHTTPClientTransport | undefined
  private opening: Promise<Client> | undefined
  private cached: McpTool[] | undefined
  private closed = false
  /** The client being connected, until it is open. */
  private connecting: Client | undefined
  /** Why this side cut the connection (a response over the byte limit): what the requests it ended fail with. */
  private cut: Error | undefined
  /** Every HTTP request of the connection, through `fetch` and the byte limit. */
  private readonly http: FetchLike

  constructor(
    readonly server: string,
    readonly url: string,
    private readonly auth: McpAuth,
    private readonly timings: McpTimings,
    /** Makes every HTTP request of the connection: where it may go (egress.ts). Default the global fetch, unchecked. */
    fetch: FetchLike = globalThis.fetch,
  ) {
    const max = timings.maxResponseBytes ?? MAX_RESPONSE_BYTES
    this.http = async (url, init) => capBody(await fetch(url, init), max, (err) => this.overflow(err))
  }

  /** The transport used, once connected (for logs and tests). */
  transport: 'streamable_http' | 'sse' | undefined

  /** The server's tools, listed once per connection and again after `list_changed`. Throws `McpFailure`. */
  async tools(signal?: AbortSignal, again = true): Promise<McpTool[]> {
    if (this.cached) return this.cached
    const client = await this.open(signal)
    const session = this.streamable?.sessionId
    try {
      const list = new ToolList()
      let cursor: string | undefined
      // A server whose pages never end is cut: no page past a full list, nor past the page limit, is asked for.
      for (let pages = 1; ; pages++) {
        const page = await client.listTools(cursor ? { cursor } : undefined, { signal, timeout: this.timings.connectMs })
        for (const t of page.tools) list.add(t)
        cursor = page.nextCursor
        if (!cursor || list.full || pages === MAX_LIST_PAGES) break
      }
      if (this.client === client) this.cached = list.tools
      return list.tools
    } catch (err) {
      this.drop(client)
      this.throwIfCut()
      // The server forgot the MCP session (see `call`): listed again on a new one.
      if (again && session !== undefined && httpStatus(err) === 404 && !signal?.aborted) return this.tools(signal, false)
      throw classify(this.server, err)
    }
  }

  /**
   * Calls tool `name`. An abort of `signal` cancels it by the protocol (the SDK sends `notifications/cancelled`) and
   * rejects at once. A tool's own failure is an error result; a failure to reach the server throws `McpFailure`.
   */
  async call(name: string, args: Record<string, unknown>, signal: AbortSignal, again = true): Promise<McpResult> {
    const client = await this.open(signal)
    const session = this.streamable?.sessionId
    try {
      const r = await client.callTool({ name, arguments: args }, undefined, { signal, timeout: this.timings.callMs, resetTimeoutOnProgress: true })
      const content = toResultContent((r.content ?? []) as McpBlock[], r.structuredContent)
      return { content, is_error: r.isError === true }
    } catch (err) {
      if (signal.aborted) throw err
      this.throwIfCut()
      // The server answered with a JSON-RPC error (an unknown tool, bad arguments, its own timeout): the model reads it.
      if (err instanceof McpError) return { content: [{ type: 'text', text: `MCP error ${err.code}: ${err.message}` }], is_error: true }
      this.drop(client)
      // A 404 to a request of an MCP session is the server saying it no longer knows the session (it restarted): the
      // call never ran, and the protocol asks for a new session, so it is made once more on a new connection.
      if (again && session !== undefined && httpStatus(err) === 404) return this.call(name, args, signal, false)
      throw classify(this.server, err)
    }
  }

  /**
   * Closes the connection; a later use opens it again, unless closed for good (`forGood`). A streamable HTTP session is
   * ended on the server first (`DELETE`, at most 2 s), so a session leaving memory leaves nothing open there.
   */
  async close(forGood = true): Promise<void> {
    if (forGood) this.closed = true
    const c = this.client
    const st = this.streamable
    this.client = undefined
    this.streamable = undefined
    this.opening = undefined
    this.cached = undefined
    if (st) {
      let timer: NodeJS.Timeout | undefined
      await Promise.race([st.terminateSession().catch(() => undefined), new Promise((r) => (timer = setTimeout(r, 2000)))])
      clearTimeout(timer)
    }
    await c?.close().catch(() => undefined)
  }

  /** A response went over the byte limit: the client it came to (open or connecting) closes, ending its requests. */
  private overflow(err: Error): void {
    this.cut = err
    const c = this.client ?? this.connecting
    if (c) {
      if (c === this.client) this.drop(c)
      else void c.close().catch(() => undefined)
    }
  }

  /** Throws the cut's failure, once, if this side cut the connection. */
  private throwIfCut(): void {
    const cut = this.cut
    this.cut = undefined
    if (cut) throw classify(this.server, cut)
  }

  private drop(client: Client): void {
    if (this.client !== client) return
    this.client = undefined
    this.streamable = undefined
    this.cached = undefined
    void client.close().catch(() => undefined)
  }

  /**
   * The open client, connecting first if need be. The connect is shared by every caller (the session's threads), so it
   * runs on its own time bound, not on a caller's signal: a caller whose signal aborts stops waiting for it, the others
   * go on.
   */
  private open(signal?: AbortSignal): Promise<Client> {
    if (this.closed) return Promise.reject(new McpFailure('unreachable', this.server, `the connection to MCP server ${this.server} is closed`))
    if (this.client) return Promise.resolve(this.client)
    this.opening ??= this.connect().finally(() => {
      this.opening = undefined
    })
    return untilAborted(this.opening, signal)
  }

  private async connect(): Promise<Client> {
    const headers = await this.auth.headers(this.url)
    const url = new URL(this.url)
    let client = this.newClient()
    this.connecting = client
    let streamable: StreamableHTTPClientTransport | undefined = new StreamableHTTPClientTransport(url, { requestInit: { headers }, fetch: this.http })
    try {
      await client.connect(streamable, { timeout: this.timings.connectMs })
      this.transport = 'streamable_http'
    } catch (err) {
      await client.close().catch(() => undefined)
      this.connecting = undefined
      this.throwIfCut()
      const status = httpStatus(err)
      if (status === undefined || status === 401 || status === 403 || status < 400 || status >= 500) throw classify(this.server, err)
      // A server of the older HTTP+SSE transport answers the streamable POST with 404 or 405: try that one.
      streamable = undefined
      client = this.newClient()
      this.connecting = client
      try {
        // The SDK sends `requestInit`'s headers on the event stream's GET too.
        const sse: Transport = new SSEClientTransport(url, { requestInit: { headers }, fetch: this.http })
        await client.connect(sse, { timeout: this.timings.connectMs })
        this.transport = 'sse'
      } catch (err2) {
        await client.close().catch(() => undefined)
        this.connecting = undefined
        this.throwIfCut()
        throw classify(this.server, err2)
      }
    }
    this.connecting = undefined
    if (this.closed) {
      await client.close().catch(() => undefined)
      throw new McpFailure('unreachable', this.server, `the connection to MCP server ${this.server} is closed`)
    }
    client.onclose = () => this.drop(client)
    client.onerror = () => undefined
    this.client = client
    this.streamable = streamable
    return client
  }

  private newClient(): Client {
    return new Client(
      { name: 'troupe', version: '0.1.0' },
      {
        capabilities: {},
        listChanged: {
          tools: {
            autoRefresh: false,
            debounceMs: 0,
            onChanged: () => {
              this.cached = undefined
            },
          },
        },
      },
    )
  }
}

/** `p`, or a rejection as soon as `signal` aborts. */
function untilAborted<T>(p: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return p
  if (signal.aborted) return Promise.reject(signal.reason)
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason)
    signal.addEventListener('abort', onAbort, { once: true })
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort)
        resolve(v)
      },
      (err) => {
        signal.removeEventListener('abort', onAbort)
        reject(err)
      },
    )
  })
}
