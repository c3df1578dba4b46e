import Anthropic, { APIConnectionError, APIError, APIUserAbortError } from '@anthropic-ai/sdk'
import type { MessageCreateParamsStreaming } from '@anthropic-ai/sdk/resources/messages'
import type { ModelUsage } from '../../protocol/usage.js'

/** One finished piece of a model response, in order, before the actor turns it into stored events. */
export type ModelOutput =
  | { type: 'agent.thinking'; id: string }
  | { type: 'agent.message'; id: string; content: Array<{ type: 'text'; text: string }> }
  | { type: 'tool_use'; name: string; input: Record<string, unknown> }

export interface ModelResponse {
  outputs: ModelOutput[]
  usage: ModelUsage
  stopReason: string | null
}

/** Stream-only previews (WIRE §7.3 event_deltas): `event_start`, then `event_delta`s for agent.message. */
export type Preview = (type: 'event_start' | 'event_delta', payload: unknown, deltaOf: 'agent.message' | 'agent.thinking') => void

export type ModelFailure =
  | { kind: 'aborted' }
  /** Overloaded, rate limited, a 5xx or a lost connection: worth another attempt after a pause. */
  | { kind: 'retryable'; type: string; message: string; retryAfterMs?: number }
  | { kind: 'fatal'; type: string; message: string }

/**
 * The official client, built so that Troupe owns retries (maxRetries 0): a retry is visible in the session as
 * a session.error with retry_status and a rescheduled status, not hidden inside the client.
 */
export function modelClient(baseURL: string | undefined, apiKey: string | undefined): Anthropic {
  return new Anthropic({
    baseURL: baseURL ?? undefined,
    // A proxy in front of the model may hold the credentials; the client insists on something.
    apiKey: apiKey ?? 'troupe-no-key',
    maxRetries: 0,
    timeout: 10 * 60_000,
  })
}

/**
 * One streaming Messages API request. Previews go out as the text arrives; the finished outputs are
 * returned only once the whole response is in, so a request that dies mid-way leaves no final events
 * (WIRE §7.3: the span end closes the preview).
 */
export async function streamModel(
  client: Anthropic,
  params: MessageCreateParamsStreaming,
  signal: AbortSignal,
  preview: Preview,
  newEventId: () => string,
): Promise<ModelResponse> {
  const stream = await client.messages.create(params, { signal })
  const outputs: ModelOutput[] = []
  const usage: Record<string, unknown> = {}
  let stopReason: string | null = null
  let message: Extract<ModelOutput, { type: 'agent.message' }> | null = null
  const blocks = new Map<number, { kind: 'text'; slot: number } | { kind: 'tool'; name: string; json: string } | { kind: 'other' }>()
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
        } else blocks.set(ev.index, { kind: 'other' })
        break
      }
      case 'content_block_delta': {
        const b = blocks.get(ev.index)
        const d = ev.delta
        if (b?.kind === 'text' && d.type === 'text_delta' && message) {
          message.content[b.slot]!.text += d.text
          preview('event_delta', {
            type: 'event_delta',
            event_id: message.id,
            delta: { type: 'content_delta', content: { type: 'text', text: d.text }, index: b.slot },
          }, 'agent.message')
        } else if (b?.kind === 'tool' && d.type === 'input_json_delta') b.json += d.partial_json
        break
      }
      case 'content_block_stop': {
        const b = blocks.get(ev.index)
        if (b?.kind === 'tool') outputs.push({ type: 'tool_use', name: b.name, input: parseInput(b.json) })
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
  return { outputs, usage: usage as unknown as ModelUsage, stopReason }
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

/** Sorts a failed request into what the session does next (WIRE §7.5 error types). */
export function classifyFailure(err: unknown): ModelFailure {
  if (err instanceof APIUserAbortError || (err instanceof Error && err.name === 'AbortError')) return { kind: 'aborted' }
  if (err instanceof APIConnectionError) {
    return { kind: 'retryable', type: 'model_request_failed_error', message: `The model endpoint could not be reached: ${err.message}` }
  }
  if (err instanceof APIError) {
    const body = err.error as { error?: { type?: string; message?: string }; type?: string } | undefined
    const type = body?.error?.type ?? body?.type
    const detail = body?.error?.message ?? err.message
    const retryAfterMs = retryAfter(err.headers)
    if (err.status === 529 || type === 'overloaded_error') {
      return { kind: 'retryable', type: 'model_overloaded_error', message: `The model is overloaded: ${detail}`, retryAfterMs }
    }
    if (err.status === 429 || type === 'rate_limit_error') {
      return { kind: 'retryable', type: 'model_rate_limited_error', message: `The model request was rate limited: ${detail}`, retryAfterMs }
    }
    if (err.status === undefined || err.status >= 500 || err.status === 408) {
      return { kind: 'retryable', type: 'model_request_failed_error', message: `The model request failed: ${detail}`, retryAfterMs }
    }
    return { kind: 'fatal', type: 'model_request_failed_error', message: `The model rejected the request (${err.status}): ${detail}` }
  }
  return { kind: 'retryable', type: 'model_request_failed_error', message: `The model request failed: ${(err as Error)?.message ?? String(err)}` }
}

function retryAfter(h: Headers | undefined): number | undefined {
  const ms = Number(h?.get('retry-after-ms'))
  if (Number.isFinite(ms) && ms > 0) return ms
  const s = Number(h?.get('retry-after'))
  if (Number.isFinite(s) && s > 0) return s * 1000
  return undefined
}
