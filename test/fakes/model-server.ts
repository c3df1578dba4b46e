/**
 * A scripted stand-in for the vendor's Messages API, for tests.
 *
 * It is a real HTTP server so that Troupe's real client (`@anthropic-ai/sdk`) does the
 * parsing, retry decisions and abort handling exactly as it will in production; only the
 * model's answers are fake. Everything it sends follows the wire format the SDK parses
 * (see node_modules/@anthropic-ai/sdk/src/core/streaming.ts and lib/MessageStream.ts).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { randomBytes } from 'node:crypto'
import type { AddressInfo, Socket } from 'node:net'

export type ScriptStep =
  /** An assistant text block, streamed as `chunks` text deltas (default 3; fewer when the text is shorter). */
  | { type: 'text'; text: string; chunks?: number }
  /** A thinking block: thinking deltas, then one signature_delta, as the API sends it. */
  | { type: 'thinking'; thinking: string; signature?: string }
  /** A client tool call; `id` defaults to `toolu_` + random. Its input JSON is streamed in several pieces. */
  | { type: 'tool_use'; name: string; input: Record<string, unknown>; id?: string }
  /** A server tool's use (the provider runs it): `id` defaults to `srvtoolu_` + random; its input streamed as a tool_use's. */
  | { type: 'server_tool_use'; name: 'web_search' | 'web_fetch'; input: Record<string, unknown>; id?: string }
  /**
   * A web search's result block, whole at its start, as the API sends it: each result `web_search_result`
   * (`encrypted_content` defaults to random base64, `page_age` to null), or an error code. `tool_use_id` defaults to the
   * last server_tool_use step's id.
   */
  | {
      type: 'web_search_tool_result'
      content: Array<{ url: string; title: string; encrypted_content?: string; page_age?: string | null }> | { error_code: string }
      tool_use_id?: string
    }
  /** A web fetch's result block: the page as a text document (`retrieved_at` defaults to now), or an error code. */
  | {
      type: 'web_fetch_tool_result'
      content: { url: string; text: string; title?: string; retrieved_at?: string } | { error_code: string }
      tool_use_id?: string
    }

export type FakeStopReason = 'end_turn' | 'tool_use' | 'max_tokens' | 'refusal' | 'stop_sequence' | 'pause_turn' | 'model_context_window_exceeded'

export interface ScriptedUsage {
  /** Default 10. */
  input_tokens?: number
  /** Default: about one token per 4 characters of generated content, at least 1. */
  output_tokens?: number
  /** Default 0. */
  cache_read_input_tokens?: number
  /** Default 0. */
  cache_creation_input_tokens?: number
  /** Default: all of `cache_creation_input_tokens` in the 5-minute bucket, as the API reports for default caching. */
  cache_creation?: { ephemeral_5m_input_tokens?: number; ephemeral_1h_input_tokens?: number }
  /** Default: absent (null), as for a request that used no server tools. Missing counters are 0. */
  server_tool_use?: { web_search_requests?: number; web_fetch_requests?: number }
  /** Default: null. */
  output_tokens_details?: { thinking_tokens: number }
}

export interface ScriptedError {
  /** HTTP status, e.g. 529 (OverloadedError), 429 (RateLimitError), 500 (InternalServerError). */
  status: number
  /** `error.type` in the body, e.g. 'overloaded_error', 'rate_limit_error', 'api_error'. */
  type: string
  /** Default: a message like the API's for that type. */
  message?: string
  /** Passed through as `error.details`, so the SDK can pick a code-specific error class. Default: absent. */
  details?: Record<string, unknown>
  /**
   * Whether the SDK may retry this by itself. Default false: the reply carries `x-should-retry: false`,
   * which the SDK obeys before any status-based rule, so Troupe's own retry logic is what a test sees.
   * When true: `x-should-retry: true`.
   */
  clientRetries?: boolean
  /**
   * Sent as `retry-after-ms` (and as whole seconds in `retry-after`) on retryable statuses
   * (408, 409, 429, >= 500). Default 0 when `clientRetries` is false; 1 when it is true, because
   * the SDK ignores a 0 hint and falls back to its own 0.5 s+ backoff.
   */
  retryAfterMs?: number
}

export interface ScriptedReply {
  /** Content blocks in order. Default: one text block "ok". */
  steps?: ScriptStep[]
  /** Default: 'tool_use' if any step is a tool_use, else 'end_turn'. */
  stop_reason?: FakeStopReason
  /** Default null. Only meaningful with stop_reason 'stop_sequence'. */
  stop_sequence?: string | null
  usage?: ScriptedUsage
  /** Wait this long before sending headers. Default 0. */
  delayMs?: number
  /** Wait this long between SSE events, so a test can act mid-stream. Default 0 (no pause). */
  chunkDelayMs?: number
  /**
   * Send headers and message_start (and a ping), then never finish, until the client aborts or
   * the server closes. For a non-streaming request: send headers, never the body. Default false.
   */
  hang?: boolean
  /**
   * Send this many SSE events (counting message_start and pings), then stall like `hang`, so a
   * test can abort at a known point, e.g. after the first text delta. Streaming requests only.
   * Default: never.
   */
  stallAfterEvents?: number
  /** Reply with this HTTP error instead of a message. Default: none. */
  error?: ScriptedError
  /**
   * Stream the content blocks, then an SSE `error` event in place of message_delta/message_stop,
   * as the API does when it overloads mid-stream. Streaming requests only. Default: none.
   */
  streamError?: { type: string; message?: string }
  /**
   * Destroy the connection after writing this many SSE events, to simulate a network drop
   * mid-stream. Not counted in `aborted`. Streaming requests only. Default: never.
   */
  dropAfterEvents?: number
  /** Extra response headers, applied over the defaults. Default: none. */
  headers?: Record<string, string>
  /** The message's model. Default: the model the request asked for. */
  model?: string
  /** Leave the last content block open (no content_block_stop), as a response cut off inside it might. Default false. */
  openLastBlock?: boolean
}

export interface RecordedRequest {
  headers: Record<string, string | string[] | undefined>
  /** The parsed JSON body; the raw text if it was not JSON; undefined if empty. */
  body: any
  /** Date.now() when the body had been read. */
  at: number
  method: string
  /** Path and query, e.g. '/v1/messages'. */
  path: string
}

export interface FakeModelServer {
  /** Base URL without a trailing slash, e.g. http://127.0.0.1:43123 — pass as the client's `baseURL`. */
  url: string
  /** Every request received, in order of arrival of its complete body. */
  requests: RecordedRequest[]
  /** Queue replies consumed in order; when the queue is empty, the fallback answers (default: text "ok", end_turn). */
  enqueue(...replies: ScriptedReply[]): void
  /** A function consulted for each request before the queue (return undefined to fall through). */
  setHandler(fn: ((req: RecordedRequest) => ScriptedReply | undefined) | undefined): void
  setFallback(reply: ScriptedReply): void
  /**
   * Answer every request offering one of these server tool types with the 400 a model or proxy without them gives,
   * naming the type (as the API's union errors do: the tag found, then those it expects). Undefined: take them (default).
   */
  refuseServerTools(types: string[] | undefined): void
  /** Replies still queued. */
  readonly queued: number
  /** Resolves when `n` requests in total have been received. Rejects after `timeoutMs` (default 5000). */
  waitForRequests(n: number, timeoutMs?: number): Promise<void>
  /** Number of requests whose connection the client closed before the reply was complete. */
  readonly aborted: number
  /** Resolves when `aborted` reaches `n`. Rejects after `timeoutMs` (default 5000). */
  waitForAborted(n: number, timeoutMs?: number): Promise<void>
  /** Closes the server, cutting any hanging replies (those are not counted as aborted). */
  close(): Promise<void>
}

const MESSAGES_PATH = '/v1/messages'
const DEFAULT_WAIT_MS = 5000
const DEFAULT_INPUT_TOKENS = 10
const DEFAULT_TEXT_CHUNKS = 3
const INPUT_JSON_PIECES = 3

const DEFAULT_ERROR_MESSAGES: Record<string, string> = {
  invalid_request_error: 'Invalid request',
  authentication_error: 'invalid x-api-key',
  billing_error: 'Your credit balance is too low to access the Anthropic API.',
  permission_error: 'Your API key does not have permission to use the specified resource.',
  not_found_error: 'Not found',
  request_too_large: 'Request exceeds the maximum allowed number of bytes.',
  rate_limit_error: 'Number of request tokens has exceeded your per-minute rate limit',
  timeout_error: 'Request timed out',
  api_error: 'Internal server error',
  overloaded_error: 'Overloaded',
}

const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'

/** Same look as the API's ids (`msg_01…`, `toolu_01…`), so id-shape checks in Troupe behave as in production. */
function randomId(prefix: string): string {
  const bytes = randomBytes(22)
  let out = `${prefix}01`
  for (const b of bytes) out += ALNUM[b % ALNUM.length]
  return out
}

/** Splits by code point so no piece ends inside a surrogate pair. */
function splitPieces(s: string, pieces: number): string[] {
  const chars = Array.from(s)
  if (chars.length === 0) return []
  const n = Math.max(1, Math.min(Math.floor(pieces), chars.length))
  const size = Math.ceil(chars.length / n)
  const out: string[] = []
  for (let i = 0; i < chars.length; i += size) out.push(chars.slice(i, i + size).join(''))
  return out
}

function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500
}

interface SseEvent {
  event: string
  data: unknown
}

interface BuiltReply {
  message: Record<string, any>
  /** Full event list of a complete stream. */
  events: SseEvent[]
  /** How many leading events a hanging reply sends before stalling. */
  hangAfter: number
}

function buildReply(reply: ScriptedReply, requestedModel: unknown): BuiltReply {
  const steps: ScriptStep[] = reply.steps ?? [{ type: 'text', text: 'ok' }]
  const model = reply.model ?? (typeof requestedModel === 'string' ? requestedModel : 'claude-fake')
  const stopReason: FakeStopReason = reply.stop_reason ?? (steps.some((s) => s.type === 'tool_use') ? 'tool_use' : 'end_turn')
  const u = reply.usage ?? {}

  const blocks: Record<string, any>[] = []
  const blockEvents: SseEvent[][] = []
  let generatedChars = 0
  let lastServerUse = ''
  steps.forEach((step, index) => {
    const events: SseEvent[] = []
    const delta = (d: Record<string, unknown>) => events.push({ event: 'content_block_delta', data: { type: 'content_block_delta', index, delta: d } })
    switch (step.type) {
      case 'text': {
        generatedChars += step.text.length
        blocks.push({ type: 'text', text: step.text, citations: null })
        events.push({
          event: 'content_block_start',
          data: { type: 'content_block_start', index, content_block: { type: 'text', text: '', citations: null } },
        })
        for (const piece of splitPieces(step.text, step.chunks ?? DEFAULT_TEXT_CHUNKS)) {
          delta({ type: 'text_delta', text: piece })
        }
        break
      }
      case 'thinking': {
        generatedChars += step.thinking.length
        const signature = step.signature ?? randomBytes(48).toString('base64')
        blocks.push({ type: 'thinking', thinking: step.thinking, signature })
        events.push({
          event: 'content_block_start',
          data: {
            type: 'content_block_start',
            index,
            content_block: { type: 'thinking', thinking: '', signature: '' },
          },
        })
        for (const piece of splitPieces(step.thinking, DEFAULT_TEXT_CHUNKS)) {
          delta({ type: 'thinking_delta', thinking: piece })
        }
        delta({ type: 'signature_delta', signature })
        break
      }
      case 'tool_use': {
        const id = step.id ?? randomId('toolu_')
        const json = JSON.stringify(step.input)
        generatedChars += json.length
        blocks.push({ type: 'tool_use', id, name: step.name, input: step.input, caller: { type: 'direct' } })
        events.push({
          event: 'content_block_start',
          data: {
            type: 'content_block_start',
            index,
            content_block: { type: 'tool_use', id, name: step.name, input: {}, caller: { type: 'direct' } },
          },
        })
        // The API opens tool input with an empty partial_json; keeping it exercises the same client path.
        delta({ type: 'input_json_delta', partial_json: '' })
        for (const piece of splitPieces(json, INPUT_JSON_PIECES)) {
          delta({ type: 'input_json_delta', partial_json: piece })
        }
        break
      }
      case 'server_tool_use': {
        const id = step.id ?? randomId('srvtoolu_')
        lastServerUse = id
        const json = JSON.stringify(step.input)
        generatedChars += json.length
        blocks.push({ type: 'server_tool_use', id, name: step.name, input: step.input, caller: { type: 'direct' } })
        events.push({
          event: 'content_block_start',
          data: { type: 'content_block_start', index, content_block: { type: 'server_tool_use', id, name: step.name, input: {}, caller: { type: 'direct' } } },
        })
        for (const piece of splitPieces(json, INPUT_JSON_PIECES)) delta({ type: 'input_json_delta', partial_json: piece })
        break
      }
      case 'web_search_tool_result':
      case 'web_fetch_tool_result': {
        const block = { type: step.type, tool_use_id: step.tool_use_id ?? lastServerUse, content: serverResultContent(step), caller: { type: 'direct' } }
        blocks.push(block)
        events.push({ event: 'content_block_start', data: { type: 'content_block_start', index, content_block: block } })
        break
      }
    }
    if (!(reply.openLastBlock && index === steps.length - 1)) events.push({ event: 'content_block_stop', data: { type: 'content_block_stop', index } })
    blockEvents.push(events)
  })

  const cacheCreationTokens = u.cache_creation_input_tokens ?? 0
  const outputTokens = u.output_tokens ?? Math.max(1, Math.ceil(generatedChars / 4))
  const serverToolUse =
    u.server_tool_use === undefined
      ? null
      : {
          web_search_requests: u.server_tool_use.web_search_requests ?? 0,
          web_fetch_requests: u.server_tool_use.web_fetch_requests ?? 0,
        }
  const usage = {
    input_tokens: u.input_tokens ?? DEFAULT_INPUT_TOKENS,
    cache_creation_input_tokens: cacheCreationTokens,
    cache_read_input_tokens: u.cache_read_input_tokens ?? 0,
    cache_creation: {
      ephemeral_5m_input_tokens: u.cache_creation?.ephemeral_5m_input_tokens ?? cacheCreationTokens,
      ephemeral_1h_input_tokens: u.cache_creation?.ephemeral_1h_input_tokens ?? 0,
    },
    output_tokens: outputTokens,
    output_tokens_details: u.output_tokens_details ?? null,
    server_tool_use: serverToolUse,
    service_tier: 'standard',
    inference_geo: null,
    speed: 'standard',
  }
  const stopDetails = stopReason === 'refusal' ? { type: 'refusal', category: null, explanation: null } : null
  const stopSequence = reply.stop_sequence ?? null
  const id = randomId('msg_')

  const message = {
    id,
    type: 'message',
    role: 'assistant',
    model,
    content: blocks,
    stop_reason: stopReason,
    stop_sequence: stopSequence,
    stop_details: stopDetails,
    container: null,
    diagnostics: null,
    usage,
  }

  // message_start carries the input side of usage; output is only a placeholder until message_delta.
  const startMessage = {
    ...message,
    content: [],
    stop_reason: null,
    stop_sequence: null,
    stop_details: null,
    usage: { ...usage, output_tokens: Math.min(1, outputTokens), output_tokens_details: null, server_tool_use: null },
  }
  const events: SseEvent[] = [
    { event: 'message_start', data: { type: 'message_start', message: startMessage } },
    { event: 'ping', data: { type: 'ping' } },
  ]
  const hangAfter = events.length
  blockEvents.forEach((be, i) => {
    if (i > 0) events.push({ event: 'ping', data: { type: 'ping' } })
    events.push(...be)
  })
  events.push(
    {
      event: 'message_delta',
      data: {
        type: 'message_delta',
        delta: { stop_reason: stopReason, stop_sequence: stopSequence, stop_details: stopDetails, container: null },
        // The API repeats the cumulative counters here; the SDK overwrites its snapshot with them.
        usage: {
          input_tokens: usage.input_tokens,
          cache_creation_input_tokens: usage.cache_creation_input_tokens,
          cache_read_input_tokens: usage.cache_read_input_tokens,
          output_tokens: usage.output_tokens,
          output_tokens_details: usage.output_tokens_details,
          server_tool_use: usage.server_tool_use,
        },
      },
    },
    { event: 'message_stop', data: { type: 'message_stop' } },
  )
  return { message, events, hangAfter }
}

/** A server tool result step's `content` as the API shapes it. */
function serverResultContent(step: Extract<ScriptStep, { type: 'web_search_tool_result' | 'web_fetch_tool_result' }>): unknown {
  const c = step.content
  if ('error_code' in c)
    return { type: step.type === 'web_search_tool_result' ? 'web_search_tool_result_error' : 'web_fetch_tool_result_error', error_code: c.error_code }
  if (Array.isArray(c)) {
    return c.map((r) => ({
      type: 'web_search_result',
      url: r.url,
      title: r.title,
      encrypted_content: r.encrypted_content ?? randomBytes(24).toString('base64'),
      page_age: r.page_age ?? null,
    }))
  }
  const page = c as { url: string; text: string; title?: string; retrieved_at?: string }
  return {
    type: 'web_fetch_result',
    url: page.url,
    retrieved_at: page.retrieved_at ?? new Date().toISOString(),
    content: { type: 'document', source: { type: 'text', media_type: 'text/plain', data: page.text }, title: page.title ?? null, citations: null },
  }
}

function sseFrame(e: SseEvent): string {
  return `event: ${e.event}\ndata: ${JSON.stringify(e.data)}\n\n`
}

function errorBody(type: string, message: string | undefined, requestId: string, details?: Record<string, unknown>) {
  const error: Record<string, unknown> = { type, message: message ?? DEFAULT_ERROR_MESSAGES[type] ?? type }
  if (details !== undefined) error.details = details
  return { type: 'error', error, request_id: requestId }
}

/** Validates what the real API would reject outright, so a malformed Troupe request fails loudly in tests. */
function requestProblem(body: any): string | undefined {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return 'body: expected a JSON object'
  if (typeof body.model !== 'string' || body.model === '') return 'model: Field required'
  if (typeof body.max_tokens !== 'number') return 'max_tokens: Field required'
  if (!Array.isArray(body.messages)) return 'messages: Field required'
  return serverToolProblem(body.tools) ?? toolPairingProblem(body.messages) ?? serverPairingProblem(body.messages)
}

/** The API's rules for server tool definitions it checks first: the name its type requires, one domain list. */
function serverToolProblem(tools: unknown): string | undefined {
  if (!Array.isArray(tools)) return undefined
  for (const [i, d] of tools.entries()) {
    const kind = typeof d?.type === 'string' ? /^(web_search|web_fetch)_\d{8}$/.exec(d.type)?.[1] : undefined
    if (!kind) continue
    if (d.name !== kind) return `tools.${i}.name: Input should be '${kind}'`
    if (d.allowed_domains && d.blocked_domains) return `tools.${i}: allowed_domains and blocked_domains cannot both be set`
  }
  return undefined
}

/**
 * Server tool blocks handed back: each server_tool_use of an assistant message (but the last, which the model continues)
 * is answered by a result block of the same message after it, and each result answers one.
 */
function serverPairingProblem(messages: any[]): string | undefined {
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]
    if (m?.role !== 'assistant' || !Array.isArray(m.content)) continue
    const uses = new Set<string>()
    const answered = new Set<string>()
    for (const [j, b] of m.content.entries()) {
      if (b?.type === 'server_tool_use') uses.add(b.id)
      if (b?.type === 'web_search_tool_result' || b?.type === 'web_fetch_tool_result') {
        if (!uses.has(b.tool_use_id)) return `messages.${i}.content.${j}: ${b.type} answers no earlier server_tool_use: ${b.tool_use_id}`
        answered.add(b.tool_use_id)
      }
    }
    const missing = [...uses].filter((id) => !answered.has(id))
    if (missing.length && i < messages.length - 1) return `messages.${i}: server_tool_use ids without results: ${missing.join(', ')}`
  }
  return undefined
}

/**
 * The Messages API's pairing rule, in its words: every tool_use of an assistant message is answered by a
 * tool_result in the next message, and every tool_result answers a tool_use of the message before it.
 */
function toolPairingProblem(messages: any[]): string | undefined {
  const blocks = (m: any): any[] => (Array.isArray(m?.content) ? m.content : [])
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]
    if (m?.role === 'user') {
      const prev = i > 0 && messages[i - 1]?.role === 'assistant' ? blocks(messages[i - 1]) : []
      const uses = new Set(prev.filter((b) => b?.type === 'tool_use').map((b) => b.id))
      for (const [j, b] of blocks(m).entries()) {
        if (b?.type === 'tool_result' && !uses.has(b.tool_use_id)) {
          return `messages.${i}.content.${j}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${b.tool_use_id}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`
        }
      }
    }
    if (m?.role === 'assistant') {
      const next = messages[i + 1]
      if (!next) continue // the last message: the model continues it
      const answered = new Set(
        blocks(next)
          .filter((b) => b?.type === 'tool_result')
          .map((b) => b.tool_use_id),
      )
      const missing = blocks(m)
        .filter((b) => b?.type === 'tool_use' && !answered.has(b.id))
        .map((b) => b.id)
      if (missing.length) {
        return `messages.${i}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`
      }
    }
  }
  return undefined
}

export async function startFakeModelServer(): Promise<FakeModelServer> {
  const requests: RecordedRequest[] = []
  const queue: ScriptedReply[] = []
  let handler: ((req: RecordedRequest) => ScriptedReply | undefined) | undefined
  let fallback: ScriptedReply = { steps: [{ type: 'text', text: 'ok' }] }
  let refused: string[] | undefined
  let aborted = 0
  let closing = false
  const sockets = new Set<Socket>()
  const waiters = new Set<() => void>()
  const notify = () => {
    for (const w of [...waiters]) w()
  }

  function waitUntil(cond: () => boolean, what: () => string, timeoutMs: number): Promise<void> {
    if (cond()) return Promise.resolve()
    return new Promise((resolve, reject) => {
      const check = () => {
        if (!cond()) return
        clearTimeout(timer)
        waiters.delete(check)
        resolve()
      }
      const timer = setTimeout(() => {
        waiters.delete(check)
        reject(new Error(`fake model server: timed out after ${timeoutMs} ms waiting for ${what()}`))
      }, timeoutMs)
      waiters.add(check)
    })
  }

  function pickReply(rec: RecordedRequest): ScriptedReply {
    const fromHandler = handler?.(rec)
    if (fromHandler) return fromHandler
    return queue.shift() ?? fallback
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = []
    for await (const c of req) chunks.push(c as Buffer)
    const raw = Buffer.concat(chunks).toString('utf8')
    let body: any
    let bodyIsJson = true
    if (raw === '') body = undefined
    else {
      try {
        body = JSON.parse(raw)
      } catch {
        body = raw
        bodyIsJson = false
      }
    }
    const rec: RecordedRequest = {
      headers: req.headers,
      body,
      at: Date.now(),
      method: req.method ?? 'GET',
      path: req.url ?? '/',
    }
    requests.push(rec)
    notify()

    const requestId = randomId('req_')
    // Once the reply is settled, a closing connection is just keep-alive housekeeping, not an abort.
    let settled = false
    let clientGone = false
    res.on('close', () => {
      if (!res.writableFinished) clientGone = true
      if (clientGone && !settled && !closing) {
        settled = true
        aborted++
        notify()
      }
    })

    const sendJson = (status: number, payload: unknown, headers: Record<string, string> = {}) => {
      settled = true
      res.writeHead(status, { 'content-type': 'application/json', 'request-id': requestId, ...headers })
      res.end(JSON.stringify(payload))
    }
    const sendPlainError = (status: number, type: string, message: string) =>
      sendJson(status, errorBody(type, message, requestId), { 'x-should-retry': 'false' })

    const [pathname] = rec.path.split('?')
    if (rec.method !== 'POST' || pathname !== MESSAGES_PATH) {
      return sendPlainError(404, 'not_found_error', `fake model server: no route for ${rec.method} ${rec.path}`)
    }
    if (!req.headers['x-api-key'] && !req.headers.authorization) {
      return sendPlainError(401, 'authentication_error', 'x-api-key header is required')
    }
    if (!bodyIsJson) return sendPlainError(400, 'invalid_request_error', 'body: invalid JSON')
    const problem = requestProblem(body)
    if (problem) return sendPlainError(400, 'invalid_request_error', `fake model server: ${problem}`)
    const tools: any[] = Array.isArray(body.tools) ? body.tools : []
    const refusedAt = tools.findIndex((d) => refused?.includes(d?.type))
    if (refusedAt >= 0) {
      const taken = ['custom', 'bash_20250124', 'text_editor_20250728', 'web_search_20250305', 'web_fetch_20250910'].filter((x) => !refused?.includes(x))
      const tag = tools[refusedAt].type
      const expected = taken.map((x) => `'${x}'`).join(', ')
      return sendPlainError(
        400,
        'invalid_request_error',
        `tools.${refusedAt}: Input tag '${tag}' found using 'type' does not match any of the expected tags: ${expected}`,
      )
    }

    const reply = pickReply(rec)
    const extraHeaders = reply.headers ?? {}

    // Resolves false if the client left while we waited, so no one writes to a dead response.
    const pause = (ms: number) =>
      new Promise<boolean>((resolve) => {
        if (res.destroyed || clientGone) return resolve(false)
        const onClose = () => {
          clearTimeout(timer)
          resolve(false)
        }
        const timer = setTimeout(() => {
          res.off('close', onClose)
          resolve(!res.destroyed)
        }, ms)
        res.once('close', onClose)
      })

    if (reply.delayMs && reply.delayMs > 0 && !(await pause(reply.delayMs))) return

    if (reply.error) {
      const e = reply.error
      const headers: Record<string, string> = { 'x-should-retry': e.clientRetries ? 'true' : 'false' }
      if (isRetryableStatus(e.status)) {
        const ms = e.retryAfterMs ?? (e.clientRetries ? 1 : 0)
        headers['retry-after-ms'] = String(ms)
        headers['retry-after'] = String(Math.ceil(ms / 1000))
      }
      return sendJson(e.status, errorBody(e.type, e.message, requestId, e.details), { ...headers, ...extraHeaders })
    }

    const built = buildReply(reply, body.model)

    if (body.stream !== true) {
      if (reply.hang) {
        res.writeHead(200, { 'content-type': 'application/json', 'request-id': requestId, ...extraHeaders })
        res.flushHeaders()
        return
      }
      return sendJson(200, built.message, extraHeaders)
    }

    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      'request-id': requestId,
      ...extraHeaders,
    })
    res.flushHeaders()

    let events = built.events
    if (reply.streamError) {
      const tail = events.findIndex((e) => e.event === 'message_delta')
      events = [...events.slice(0, tail), { event: 'error', data: errorBody(reply.streamError.type, reply.streamError.message, requestId) }]
    }
    const stallAt = reply.hang ? built.hangAfter : reply.stallAfterEvents
    if (stallAt !== undefined) events = events.slice(0, stallAt)

    for (let i = 0; i < events.length; i++) {
      if (reply.dropAfterEvents !== undefined && i >= reply.dropAfterEvents) {
        settled = true
        res.destroy()
        return
      }
      if (i > 0 && reply.chunkDelayMs && reply.chunkDelayMs > 0 && !(await pause(reply.chunkDelayMs))) return
      if (res.destroyed || clientGone) return
      res.write(sseFrame(events[i]!))
    }
    if (stallAt !== undefined) return
    settled = true
    res.end()
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      // A bug in the fake must fail the test visibly rather than hang it.
      if (!res.headersSent) {
        res.writeHead(500, { 'content-type': 'application/json', 'x-should-retry': 'false' })
        res.end(JSON.stringify(errorBody('api_error', `fake model server crashed: ${String(err)}`, 'req_crash')))
      } else res.destroy()
    })
  })
  server.on('connection', (s) => {
    sockets.add(s)
    s.on('close', () => sockets.delete(s))
  })

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject)
      resolve()
    })
  })
  const { port } = server.address() as AddressInfo

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    enqueue(...replies) {
      queue.push(...replies)
    },
    setHandler(fn) {
      handler = fn
    },
    setFallback(reply) {
      fallback = reply
    },
    refuseServerTools(types) {
      refused = types
    },
    get queued() {
      return queue.length
    },
    waitForRequests(n, timeoutMs = DEFAULT_WAIT_MS) {
      return waitUntil(
        () => requests.length >= n,
        () => `${n} requests (got ${requests.length})`,
        timeoutMs,
      )
    },
    get aborted() {
      return aborted
    },
    waitForAborted(n, timeoutMs = DEFAULT_WAIT_MS) {
      return waitUntil(
        () => aborted >= n,
        () => `${n} aborted requests (got ${aborted})`,
        timeoutMs,
      )
    },
    close() {
      closing = true
      return new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()))
        // Hanging replies and the client's keep-alive sockets would otherwise hold close() open forever.
        for (const s of sockets) s.destroy()
      })
    },
  }
}
