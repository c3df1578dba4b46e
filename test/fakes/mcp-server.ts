/**
 * A local MCP server for tests, built with the same SDK as Troupe's client (`@modelcontextprotocol/sdk`), over real
 * HTTP: the streamable HTTP transport (stateful, one session per client), or (`sse: true`) only the older HTTP+SSE
 * transport (GET /sse, POST /messages), as a server that never moved on would offer.
 *
 * Tools: `echo` {text} answers the text; `sleep` {ms} waits (or until the client cancels it, which it records);
 * `fail` answers an error result. Every call is recorded, so a test can say a call ran once. `addTool` adds a tool
 * and tells connected clients (`notifications/tools/list_changed`); `status` answers every request with that HTTP
 * status (401, 403: a server refusing the credential).
 *
 * Credentials: with `accept` set, every MCP request needs `Authorization: Bearer <one of them>` (else 401 with
 * `WWW-Authenticate: Bearer`); `authorizations` records the header of each MCP request. `oauth` (set it to turn it on)
 * is an OAuth token endpoint at `/token` taking the refresh_token grant: it checks the client as its `auth` says,
 * answers a new access token (accepted by the MCP routes from then on) and a rotated refresh token, the one used
 * becoming invalid, and counts what it was asked (`requests`) and what it granted (`refreshes`).
 */
import { randomUUID } from 'node:crypto'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js'

export interface McpCall {
  tool: string
  args: Record<string, unknown>
  at: number
  /** Set when the client cancelled it (`notifications/cancelled`). */
  cancelledAt?: number
  endedAt?: number
}

/** The fake's token endpoint (RFC 6749 §6, refresh tokens rotated at each use). */
export interface FakeOAuth {
  clientId: string
  clientSecret?: string
  auth: 'none' | 'client_secret_basic' | 'client_secret_post'
  /** The one refresh token it takes now. */
  refreshToken: string
  /** `expires_in` of the tokens it grants (seconds; undefined: none said). */
  expiresIn?: number
  /** Answers this status instead (an endpoint refusing every refresh); with `echo`, its body repeats the form (secrets too). */
  failWith?: number
  echo?: boolean
  /** Waits this long before answering (two refreshes at once overlap). */
  delayMs?: number
  /** Answers only once this settles (a test holds a refresh in flight). */
  gate?: Promise<unknown>
  /** Every request: its form and Authorization header. */
  requests: Array<{ form: Record<string, string>; authorization?: string }>
  /** Refreshes granted. */
  refreshes: number
}

export interface FakeMcpServer {
  /** The server's origin (`http://127.0.0.1:<port>`): the token endpoint is `${origin}/token`. */
  origin: string
  /** Bearer tokens the MCP routes take; undefined: no credential needed. */
  accept: Set<string> | undefined
  /** The Authorization header of each MCP request (undefined when none was sent). */
  authorizations: Array<string | undefined>
  /** The token endpoint, once a test sets it. */
  oauth: FakeOAuth | undefined
  /** The URL an agent's `mcp_servers[].url` names: `/mcp`, or `/sse` for the SSE-only server. */
  url: string
  calls: McpCall[]
  /** How many times `tools/list` was answered. */
  listings: number
  /** Connections (MCP sessions) opened by clients so far. */
  connections: number
  /** Connections open now (a streamable session ends at the client's DELETE, an SSE one when its stream closes). */
  readonly open: number
  /** Headers of the last request. */
  lastHeaders: IncomingMessage['headers'] | undefined
  /** Answers every HTTP request with this status instead (undefined: serve). */
  status: number | undefined
  addTool(name: string, description?: string): void
  /** Forgets every streamable MCP session, as a restarted server would (its next requests are answered 404). */
  forgetSessions(): void
  close(): Promise<void>
}

interface ToolDef {
  name: string
  description: string
  inputSchema: { type: 'object'; properties: Record<string, unknown>; required?: string[] }
}

const BASE_TOOLS: ToolDef[] = [
  { name: 'echo', description: 'Echoes text back.', inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] } },
  { name: 'sleep', description: 'Waits ms milliseconds.', inputSchema: { type: 'object', properties: { ms: { type: 'number' } } } },
  { name: 'fail', description: 'Always fails.', inputSchema: { type: 'object', properties: {} } },
]

/** `host`: the loopback address it listens on (default 127.0.0.1; 127.0.0.2 is another the address rules may refuse). */
export async function startFakeMcpServer(opts: { sse?: boolean; tools?: ToolDef[]; host?: string } = {}): Promise<FakeMcpServer> {
  const tools = [...(opts.tools ?? BASE_TOOLS)]
  const servers = new Set<Server>()
  const streamable = new Map<string, StreamableHTTPServerTransport>()
  const sse = new Map<string, SSEServerTransport>()
  const sockets = new Set<Socket>()

  const state: FakeMcpServer = {
    url: '',
    origin: '',
    accept: undefined,
    authorizations: [],
    oauth: undefined,
    calls: [],
    listings: 0,
    connections: 0,
    get open() {
      return servers.size
    },
    lastHeaders: undefined,
    status: undefined,
    addTool(name, description = `The ${name} tool.`) {
      tools.push({ name, description, inputSchema: { type: 'object', properties: {} } })
      for (const s of servers) void s.sendToolListChanged().catch(() => undefined)
    },
    forgetSessions() {
      streamable.clear()
    },
    close: async () => {
      for (const s of servers) await s.close().catch(() => undefined)
      for (const sock of sockets) sock.destroy()
      await new Promise<void>((resolve) => http.close(() => resolve()))
    },
  }

  function mcpServer(): Server {
    const server = new Server({ name: 'fake-mcp', version: '1.0.0' }, { capabilities: { tools: { listChanged: true } } })
    server.setRequestHandler(ListToolsRequestSchema, async () => {
      state.listings++
      return { tools }
    })
    server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
      const args = (req.params.arguments ?? {}) as Record<string, unknown>
      const call: McpCall = { tool: req.params.name, args, at: Date.now() }
      state.calls.push(call)
      try {
        switch (req.params.name) {
          case 'echo':
            return { content: [{ type: 'text', text: String(args.text ?? '') }] }
          case 'sleep': {
            const ms = Number(args.ms ?? 1000)
            await new Promise<void>((resolve) => {
              const timer = setTimeout(resolve, ms)
              extra.signal.addEventListener('abort', () => {
                call.cancelledAt = Date.now()
                clearTimeout(timer)
                resolve()
              })
            })
            return { content: [{ type: 'text', text: `slept ${ms} ms` }] }
          }
          case 'fail':
            return { content: [{ type: 'text', text: 'it failed, as it always does' }], isError: true }
          default:
            return { content: [{ type: 'text', text: `ran ${req.params.name}` }] }
        }
      } finally {
        call.endedAt = Date.now()
      }
    })
    servers.add(server)
    server.onclose = () => servers.delete(server)
    state.connections++
    return server
  }

  async function body(req: IncomingMessage): Promise<unknown> {
    const chunks: Buffer[] = []
    for await (const c of req) chunks.push(c as Buffer)
    const text = Buffer.concat(chunks).toString('utf8')
    return text ? JSON.parse(text) : undefined
  }

  async function token(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = []
    for await (const c of req) chunks.push(c as Buffer)
    const form = Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString('utf8')))
    const o = state.oauth
    const json = (status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body))
    if (!o) return void json(404, { error: 'not_found' })
    o.requests.push({ form, authorization: req.headers.authorization })
    if (o.delayMs) await new Promise((r) => setTimeout(r, o.delayMs))
    if (o.gate) await o.gate
    if (o.failWith !== undefined) {
      return void json(o.failWith, { error: 'invalid_grant', error_description: 'refused by the test', ...(o.echo ? { form } : {}) })
    }
    let client = form.client_id
    let secret = form.client_secret
    if (o.auth === 'client_secret_basic') {
      const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? '')?.[1]
      const [id, pw] = Buffer.from(basic ?? '', 'base64')
        .toString('utf8')
        .split(':')
      client = decodeURIComponent((id ?? '').replace(/\+/g, ' '))
      secret = decodeURIComponent((pw ?? '').replace(/\+/g, ' '))
    }
    if (client !== o.clientId || (o.auth !== 'none' && secret !== o.clientSecret)) return void json(401, { error: 'invalid_client' })
    if (form.grant_type !== 'refresh_token' || form.refresh_token !== o.refreshToken) return void json(400, { error: 'invalid_grant' })
    o.refreshes++
    const access = `access-${o.refreshes}-${randomUUID()}`
    o.refreshToken = `refresh-${o.refreshes}-${randomUUID()}`
    state.accept ??= new Set()
    state.accept.add(access)
    json(200, { access_token: access, token_type: 'Bearer', refresh_token: o.refreshToken, ...(o.expiresIn === undefined ? {} : { expires_in: o.expiresIn }) })
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method === 'POST' && req.url === '/token') return token(req, res)
    state.lastHeaders = req.headers
    state.authorizations.push(req.headers.authorization)
    if (state.accept && !state.accept.has(/^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '')) {
      res.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer' }).end(JSON.stringify({ error: 'invalid_token' }))
      return
    }
    if (state.status !== undefined) {
      res.writeHead(state.status, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'refused' }))
      return
    }
    const url = new URL(req.url ?? '/', 'http://localhost')
    if (opts.sse) {
      if (req.method === 'GET' && url.pathname === '/sse') {
        const t = new SSEServerTransport('/messages', res)
        sse.set(t.sessionId, t)
        t.onclose = () => sse.delete(t.sessionId)
        await mcpServer().connect(t)
        return
      }
      if (req.method === 'POST' && url.pathname === '/messages') {
        const t = sse.get(url.searchParams.get('sessionId') ?? '')
        if (!t) return void res.writeHead(404).end('no such session')
        await t.handlePostMessage(req, res, await body(req))
        return
      }
      return void res.writeHead(404).end('not found')
    }
    if (url.pathname !== '/mcp') return void res.writeHead(404).end('not found')
    const sid = req.headers['mcp-session-id']
    const parsed = req.method === 'POST' ? await body(req) : undefined
    let t = typeof sid === 'string' ? streamable.get(sid) : undefined
    if (!t) {
      if (typeof sid === 'string') return void res.writeHead(404).end('no such session')
      const transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => {
          streamable.set(id, transport)
        },
      })
      transport.onclose = () => {
        if (transport.sessionId) streamable.delete(transport.sessionId)
      }
      await mcpServer().connect(transport)
      t = transport
    }
    await t.handleRequest(req, res, parsed)
  }

  const http = createServer((req, res) => {
    handle(req, res).catch((err) => {
      if (!res.headersSent) res.writeHead(500).end(String(err))
    })
  })
  http.on('connection', (s) => {
    sockets.add(s)
    s.on('close', () => sockets.delete(s))
  })
  const host = opts.host ?? '127.0.0.1'
  await new Promise<void>((resolve) => http.listen(0, host, resolve))
  const { port } = http.address() as AddressInfo
  state.origin = `http://${host}:${port}`
  state.url = `${state.origin}${opts.sse ? '/sse' : '/mcp'}`
  return state
}
