import { format } from 'node:util'
import Anthropic, { APIConnectionError, APIError, APIUserAbortError } from '@anthropic-ai/sdk'
import type { MessageCreateParamsStreaming } from '@anthropic-ai/sdk/resources/messages'
import type { Logger } from 'pino'
import type { ModelUsage } from '../billing/index.js'
import type { ServerToolResultBlock } from '../../../protocol/session-events.js'

/** One finished piece of a model response, in order, before the actor turns it into stored events. */
export type ModelOutput =
  | { type: 'agent.thinking'; id: string }
  | { type: 'agent.message'; id: string; content: Array<{ type: 'text'; text: string }> }
  | { type: 'tool_use'; name: string; input: Record<string, unknown> }
  /** A server tool (web_search, web_fetch) the provider ran inside this response: its use (`id`, the API's), then its result. */
  | { type: 'server_tool_use'; id: string; name: string; input: Record<string, unknown> }
  | { type: 'server_tool_result'; block: ServerToolResultBlock }

export interface ModelResponse {
  outputs: ModelOutput[]
  usage: ModelUsage
  stopReason: string | null
}

/** Stream-only previews (WIRE §7.3 event_deltas): `event_start`, then `event_delta`s for agent.message. */
export type Preview = (type: 'event_start' | 'event_delta', payload: unknown, deltaOf: 'agent.message' | 'agent.thinking') => void

/** The `session.error` a failed model request is reported as. */
type ModelErrorType = 'model_overloaded_error' | 'model_rate_limited_error' | 'model_request_failed_error'

export type ModelFailure =
  | { kind: 'aborted' }
  /** Overloaded, rate limited, a 5xx or a lost connection: worth another attempt after a pause. */
  | { kind: 'retryable'; type: ModelErrorType; message: string; retryAfterMs?: number }
  | { kind: 'fatal'; type: ModelErrorType; message: string }

/** The model endpoint sessions call: the official client, and how logs and errors name it. */
export interface Model {
  client: Anthropic
  /** `POST <base URL>/v1/messages`, without any credentials the URL carried. */
  endpoint: string
  /** Logs what the client says about a request (a model deprecation) once per distinct message, not per request. */
  warnOnce(message: string): void
}

/**
 * The official client, built so that Troupe owns retries (maxRetries 0): a retry is visible in the session as
 * a session.error with retry_status and a rescheduled status, not hidden inside the client. Its logger writes
 * through pino, so stderr stays JSON.
 */
export function modelClient(baseURL: string | undefined, apiKey: string | undefined, log: Logger): Model {
  const clientLog = log.child({ component: 'model-client' })
  const line =
    (level: 'error' | 'warn' | 'info' | 'debug') =>
    (message: string, ...details: unknown[]) =>
      clientLog[level](details.length ? { details: details.map((d) => (d instanceof Error ? d.message : d)) } : {}, message)
  const client = new Anthropic({
    baseURL: baseURL ?? undefined,
    // A proxy in front of the model may hold the credentials; the client insists on something.
    apiKey: apiKey ?? 'troupe-no-key',
    maxRetries: 0,
    timeout: 10 * 60_000,
    logger: { error: line('error'), warn: line('warn'), info: line('info'), debug: line('debug') },
  })
  const seen = new Set<string>()
  return {
    client,
    endpoint: `POST ${messagesUrl(client.baseURL)}`,
    warnOnce(message) {
      if (seen.has(message)) return
      seen.add(message)
      clientLog.warn(message)
    },
  }
}

function messagesUrl(base: string): string {
  try {
    const u = new URL(base)
    u.username = ''
    u.password = ''
    return `${u.origin}${u.pathname.replace(/\/+$/, '')}/v1/messages`
  } catch {
    return `${base}/v1/messages`
  }
}

/**
 * The client prints some warnings with console.warn, outside its logger (1.11: a deprecated model, on every
 * request, before the request is sent): they go to `sink` instead. Node runs nothing else during the
 * synchronous call, so only the client's own warnings are caught.
 */
function routingWarnings<T>(sink: (message: string) => void, fn: () => T): T {
  const warn = console.warn
  console.warn = (...args: unknown[]) => sink(format(...args))
  try {
    return fn()
  } finally {
    console.warn = warn
  }
}

/**
 * One streaming Messages API request. Previews go out as the text arrives; the finished outputs are
 * returned only once the whole response is in, so a request that dies mid-way leaves no final events
 * (WIRE §7.3: the span end closes the preview).
 */
export async function streamModel(
  model: Model,
  params: MessageCreateParamsStreaming,
  signal: AbortSignal,
  preview: Preview,
  newEventId: () => string,
): Promise<ModelResponse> {
  const stream = await routingWarnings(model.warnOnce, () => model.client.messages.create(params, { signal }))
  const outputs: ModelOutput[] = []
  const usage: Record<string, unknown> = {}
  let stopReason: string | null = null
  let message: Extract<ModelOutput, { type: 'agent.message' }> | null = null
  const blocks = new Map<
    number,
    | { kind: 'text'; slot: number }
    | { kind: 'tool'; name: string; json: string }
    | { kind: 'server'; id: string; name: string; json: string; input: unknown }
    | { kind: 'other' }
  >()
  const closeMessage = () => {
    if (message) outputs.push(message)
    message = null
  }
  const mergeUsage = (u: object | null | undefined) => {
    for (const [k, v] of Object.entries(u ?? {})) if (v !== null && v !== undefined) usage[k] = v
  }

  for await (const ev of stream) {
    switch (ev.type) {
      case 'message_start':
        mergeUsage(ev.message.usage)
        break
      case 'content_block_start': {
        const b = ev.content_block
        if (b.type === 'text') {
          if (!message) {
            message = { type: 'agent.message', id: newEventId(), content: [] }
            preview('event_start', { type: 'event_start', event: { type: 'agent.message', id: message.id } }, 'agent.message')
          }
          blocks.set(ev.index, { kind: 'text', slot: message.content.length })
          message.content.push({ type: 'text', text: b.text ?? '' })
          break
        }
        closeMessage()
        if (b.type === 'thinking' || b.type === 'redacted_thinking') {
          const id = newEventId()
          preview('event_start', { type: 'event_start', event: { type: 'agent.thinking', id } }, 'agent.thinking')
          outputs.push({ type: 'agent.thinking', id })
          blocks.set(ev.index, { kind: 'other' })
        } else if (b.type === 'tool_use') {
          blocks.set(ev.index, { kind: 'tool', name: b.name, json: '' })
        } else if (b.type === 'server_tool_use') {
          blocks.set(ev.index, { kind: 'server', id: b.id, name: b.name, json: '', input: b.input })
        } else if (b.type === 'web_search_tool_result' || b.type === 'web_fetch_tool_result') {
          // A result block arrives whole at its start.
          outputs.push({ type: 'server_tool_result', block: { type: b.type, tool_use_id: b.tool_use_id, content: b.content } })
          blocks.set(ev.index, { kind: 'other' })
        } else blocks.set(ev.index, { kind: 'other' })
        break
      }
      case 'content_block_delta': {
        const b = blocks.get(ev.index)
        const d = ev.delta
        if (b?.kind === 'text' && d.type === 'text_delta' && message) {
          message.content[b.slot]!.text += d.text
          preview(
            'event_delta',
            {
              type: 'event_delta',
              event_id: message.id,
              delta: { type: 'content_delta', content: { type: 'text', text: d.text }, index: b.slot },
            },
            'agent.message',
          )
        } else if ((b?.kind === 'tool' || b?.kind === 'server') && d.type === 'input_json_delta') b.json += d.partial_json
        break
      }
      case 'content_block_stop': {
        const b = blocks.get(ev.index)
        if (b?.kind === 'tool') outputs.push({ type: 'tool_use', name: b.name, input: parseInput(b.json) })
        else if (b?.kind === 'server') outputs.push({ type: 'server_tool_use', id: b.id, name: b.name, input: serverInput(b.json, b.input) })
        blocks.delete(ev.index)
        break
      }
      case 'message_delta':
        stopReason = ev.delta.stop_reason ?? stopReason
        mergeUsage(ev.usage)
        break
    }
  }
  // The client's stream ends quietly when aborted (core/streaming.ts swallows the abort): what arrived is a
  // partial response, never a finished one.
  if (signal.aborted) throw new APIUserAbortError()
  closeMessage()
  // A response cut off (max_tokens) inside a tool call whose block was never closed: the call is still one it asked for,
  // partial, last (turn/tool-limits.ts answers it without running it).
  if (stopReason === 'max_tokens' || stopReason === 'model_context_window_exceeded') {
    for (const b of blocks.values()) if (b.kind === 'tool') outputs.push({ type: 'tool_use', name: b.name, input: parseInput(b.json) })
  }
  return { outputs, usage: usage as unknown as ModelUsage, stopReason }
}

/** A server tool's input: streamed as JSON like a client tool's, or whole in its start block. */
function serverInput(json: string, start: unknown): Record<string, unknown> {
  if (json.trim()) return parseInput(json)
  return start && typeof start === 'object' && !Array.isArray(start) ? (start as Record<string, unknown>) : {}
}

function parseInput(json: string): Record<string, unknown> {
  if (!json.trim()) return {}
  try {
    const v = JSON.parse(json)
    return v && typeof v === 'object' && !Array.isArray(v) ? v : { value: v }
  } catch {
    return { _unparsed_input: json }
  }
}

/** Sorts a failed request into what the session does next (WIRE §7.5 error types); messages name the endpoint. */
export function classifyFailure(err: unknown, endpoint: string): ModelFailure {
  if (err instanceof APIUserAbortError || (err instanceof Error && err.name === 'AbortError')) return { kind: 'aborted' }
  if (err instanceof APIConnectionError) {
    return { kind: 'retryable', type: 'model_request_failed_error', message: `${endpoint} could not be reached: ${err.message}` }
  }
  if (err instanceof APIError) {
    const body = err.error as { error?: { type?: string; message?: string }; type?: string } | undefined
    const type = body?.error?.type ?? body?.type
    const detail = body?.error?.message ?? err.message
    const retryAfterMs = retryAfter(err.headers)
    // An error event inside a 200 stream has no status of its own.
    const message = `${endpoint} ${err.status === undefined ? 'failed mid-response with' : `answered ${err.status}`}${type ? ` ${type}` : ''}: ${detail}`
    if (err.status === 529 || type === 'overloaded_error') return { kind: 'retryable', type: 'model_overloaded_error', message, retryAfterMs }
    if (err.status === 429 || type === 'rate_limit_error') return { kind: 'retryable', type: 'model_rate_limited_error', message, retryAfterMs }
    if (err.status === undefined || err.status >= 500 || err.status === 408) {
      return { kind: 'retryable', type: 'model_request_failed_error', message, retryAfterMs }
    }
    return { kind: 'fatal', type: 'model_request_failed_error', message }
  }
  return { kind: 'retryable', type: 'model_request_failed_error', message: `${endpoint} failed: ${(err as Error)?.message ?? String(err)}` }
}

function retryAfter(h: Headers | undefined): number | undefined {
  const ms = Number(h?.get('retry-after-ms'))
  if (Number.isFinite(ms) && ms > 0) return ms
  const s = Number(h?.get('retry-after'))
  if (Number.isFinite(s) && s > 0) return s * 1000
  return undefined
}
