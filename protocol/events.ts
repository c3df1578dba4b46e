/**
 * How session events (their shapes: session-events.ts) are stored and streamed on NATS.
 *
 * A stored event is one JetStream message on `troupe.events.<session id>.<thread>` whose payload is the exact
 * JSON the client sees (so list, stream and replay hand out the same bytes) and whose headers say what it is
 * without parsing it:
 *
 *   Nats-Msg-Id       <event id>   JetStream drops a re-sent duplicate within its window
 *   Troupe-Type       <event type> `event:` line of the SSE message; types starting with `_` are internal
 *   Troupe-Event-Id   <event id>   `id:` line of the SSE message
 *   Troupe-Request    <tag>        client events only: the POST that stored it (see RequestTag)
 *
 * Events the session emits together (a status and the span it opens; a message, the span it closes and the idle
 * after it) are stored as one message, one append instead of several on a turn's critical path: its payload is
 * their JSON joined by line breaks (JSON.stringify writes none inside), `Troupe-Parts` says how many,
 * `Troupe-Type` and `Troupe-Event-Id` list theirs comma-separated and `Nats-Msg-Id` is the first's id. Readers
 * split it back into events at once (`storedItems`, `liveItems`); a place in the history is then the message's
 * stream sequence and the event's part in it (`Position`).
 *
 * Client events are marked handled by the next stored event's `Troupe-Processed` header (the ids, comma
 * separated; their `processed_at` is that event's: the first part's, in a message of several), or, when no event
 * follows at once, by an internal
 * `_processed` record on the same subject, ordered and fenced with the events; readers fold both in and
 * never show the record. Stream-only previews (`event_start`, `event_delta`) are not
 * stored: the session actor core-publishes them to the live subject with `Troupe-Delta-Of` naming the event
 * type they preview, so a gateway can honour `event_deltas[]`.
 */

export const EventHeaders = {
  msgId: 'Nats-Msg-Id',
  type: 'Troupe-Type',
  id: 'Troupe-Event-Id',
  deltaOf: 'Troupe-Delta-Of',
  /** Client event ids this stored event marks as handled (their `processed_at` is this event's). */
  processed: 'Troupe-Processed',
  /** Which POST stored a client event (`formatRequestTag`): how a retry of it is recognised after a takeover. */
  request: 'Troupe-Request',
  /** A message holding several events: how many (see the module's comment). Absent: one. */
  parts: 'Troupe-Parts',
  /** Added by JetStream republish: the stored message's stream sequence. */
  sequence: 'Nats-Sequence',
} as const

/**
 * The POST that stored a client event: its key (`k:` and the client's Idempotency-Key, or `r:` and the request
 * id when it sent none), the event's place in the request, and the request's fingerprint. A retry with the same
 * key is answered with the events already stored (completing a request that was stored only in part) and
 * stores nothing twice.
 */
export interface RequestTag {
  key: string
  index: number
  count: number
  /** Fingerprint of the events as sent: the same key with another request is refused. */
  hash: string
}

/** `<hash> <index>/<count> <key>`: the key goes last, as it is the one free-form part (visible ASCII, no spaces). */
export const formatRequestTag = (t: RequestTag): string => `${t.hash} ${t.index}/${t.count} ${t.key}`

export function parseRequestTag(v: string | undefined): RequestTag | undefined {
  const m = v ? /^(\S+) (\d+)\/(\d+) (\S+)$/.exec(v) : null
  if (!m) return undefined
  const index = Number(m[2])
  const count = Number(m[3])
  return index < count ? { hash: m[1]!, index, count, key: m[4]! } : undefined
}

/** Marks client events as handled: `processed_at` of each listed id becomes this record's time. */
export interface ProcessedRecord {
  type: '_processed'
  ids: string[]
  processed_at: string
}

export const PROCESSED = '_processed'
export const isInternalType = (type: string) => type.startsWith('_')

/** Event types a client may send (WIRE §7.1). */
export const CLIENT_EVENT_TYPES = [
  'user.message',
  'user.interrupt',
  'user.tool_confirmation',
  'user.custom_tool_result',
  'user.define_outcome',
  'user.tool_result',
  'system.message',
] as const

/** Event types the service emits into history (WIRE §7.2), `session.deleted` aside: it is never listed. */
export const SERVER_EVENT_TYPES = [
  'agent.message',
  'agent.thinking',
  'agent.tool_use',
  'agent.tool_result',
  'agent.mcp_tool_use',
  'agent.mcp_tool_result',
  'agent.custom_tool_use',
  'agent.thread_message_sent',
  'agent.thread_message_received',
  'agent.thread_context_compacted',
  'session.status_running',
  'session.status_rescheduled',
  'session.status_terminated',
  'session.status_idle',
  'session.error',
  'session.thread_created',
  'session.thread_status_running',
  'session.thread_status_rescheduled',
  'session.thread_status_terminated',
  'session.thread_status_idle',
  'session.updated',
  'session.usage',
  'span.model_request_start',
  'span.model_request_end',
  'span.outcome_evaluation_start',
  'span.outcome_evaluation_ongoing',
  'span.outcome_evaluation_end',
  'workflow_run.created',
  'workflow_run.status_running',
  'workflow_run.status_idle',
  'workflow_run.status_ended',
  'workflow_run.error',
  'workflow_run.phase_started',
  'workflow_run.phase_ended',
] as const

/** The `types[]` filter of the history list: every history type except `session.deleted`. */
export const LISTABLE_EVENT_TYPES = [...CLIENT_EVENT_TYPES, ...SERVER_EVENT_TYPES] as const

/** Types a stream may ask previews of with `event_deltas[]`. */
export const DELTA_TYPES = ['agent.message', 'agent.thinking'] as const
export type DeltaType = (typeof DELTA_TYPES)[number]

/** stop_reason of session.status_idle (WIRE §7.4). */
export type StopReason =
  | { type: 'end_turn' }
  | { type: 'requires_action'; event_ids: string[] }
  | { type: 'retries_exhausted' }
  | { type: 'budget_reached' }
  | { type: 'refusal' }

export type SessionStatus = 'idle' | 'running' | 'rescheduling' | 'terminated'
export const SESSION_STATUSES = ['rescheduling', 'running', 'idle', 'terminated'] as const

/** What the session owner answers to `stream.open`: the last stored stream sequence of the session (0: none). */
export interface StreamOpenReply {
  last_seq: number
}
