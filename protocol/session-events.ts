import type { Budget, SessionUsage } from './cost.js'
import type { StopReason } from './events.js'
import type { SessionAgent } from './session.js'

/**
 * The session events Troupe stores (WIRE.md §7), one type each, as the JSON a client lists and streams: a union
 * discriminated on `type`. Each is the official client's `BetaManagedAgents…Event` (its names, its fields), with two
 * kinds of difference, both to say exactly what is stored:
 * - narrower where Troupe writes less than the client allows and a reader relies on it: the content blocks are the
 *   ones the event schemas accept (schemas/events.ts) and the service writes, shapes the Messages API takes as they are;
 * - wider where Troupe's bytes fall outside the client's type (test/unit/session-events-types.test.ts lists each).
 * The types the client knows and Troupe never stores (workflow runs, compaction) are not here: adding
 * one to the union makes every exhaustive handler of it (actors/session/history.ts) say what it does with it.
 */

// ------------------------------------------------------------------------------------------------ content blocks

export interface TextBlock {
  type: 'text'
  text: string
}

export interface UrlSource {
  type: 'url'
  url: string
}

export interface FileSource {
  type: 'file'
  file_id: string
}

export interface ImageBlock {
  type: 'image'
  source: { type: 'base64'; data: string; media_type: 'image/jpeg' | 'image/png' | 'image/gif' | 'image/webp' } | UrlSource | FileSource
}

export interface DocumentBlock {
  type: 'document'
  source: { type: 'base64'; data: string; media_type: 'application/pdf' } | { type: 'text'; data: string; media_type: 'text/plain' } | UrlSource | FileSource
  title?: string | null
  context?: string | null
}

export interface SearchResultBlock {
  type: 'search_result'
  /** The result's URL. */
  source: string
  title: string
  content: TextBlock[]
  /** Required by the client's type; the event schemas let a client leave it out, and then it is stored without. */
  citations?: { enabled: boolean }
}

export interface RedactedBlock {
  type: 'redacted'
}

/** What a user message (or a message between threads) holds. */
export type UserContent = TextBlock | ImageBlock | DocumentBlock

/** What a tool result holds. */
export type ToolResultContent = TextBlock | ImageBlock | DocumentBlock | SearchResultBlock

// ----------------------------------------------------------------------------------------- shared field shapes

/** WIRE §7.2 `model_usage` of `span.model_request_end` (the client's BetaManagedAgentsSpanModelUsage). */
export interface SpanModelUsage {
  input_tokens: number
  output_tokens: number
  cache_creation_input_tokens: number
  cache_read_input_tokens: number
  speed?: 'standard' | 'fast' | null
  /** Beyond the client's type: the provider's cache writes by lifetime, when it reported them. */
  cache_creation?: ModelUsage['cache_creation']
  /** Beyond the client's type: the provider's server tool counts, when it reported them. */
  server_tool_use?: ModelUsage['server_tool_use']
}

/**
 * A model request's usage as the Messages API reported it (its nulls dropped). What billing sums, and what a grader
 * pass stores as its `usage` (WIRE names the `model_usage` shape; the cache counts may be missing).
 */
export interface ModelUsage {
  input_tokens: number
  output_tokens: number
  cache_creation_input_tokens?: number | null
  cache_read_input_tokens?: number | null
  /** Cache writes by lifetime. When absent, all of `cache_creation_input_tokens` counts as 5-minute writes. */
  cache_creation?: { ephemeral_5m_input_tokens?: number | null; ephemeral_1h_input_tokens?: number | null } | null
  server_tool_use?: { web_search_requests?: number | null; web_fetch_requests?: number | null } | null
  speed?: 'standard' | 'fast' | null
  /** "us" marks US-only inference, which some models price higher. */
  inference_geo?: string | null
}

/** WIRE §7.2 permission evaluation of a tool use. */
export type ToolEvaluation =
  | { type: 'always_allow' }
  | { type: 'always_ask' }
  | { type: 'auto'; evaluated_permission: { type: 'allow' } | { type: 'ask'; reason_code: string } | { type: 'deny'; reason_code: string } }

/** WIRE §7.4 `stop_details`. */
export interface RefusalStopDetails {
  type: 'refusal'
  category: 'cyber' | 'bio' | 'frontier_llm' | 'reasoning_extraction' | 'general_harms' | null
  explanation: string | null
}

/** WIRE §7.5 `retry_status`: exhausted, the turn is over; terminal, the session is. */
export interface RetryStatus {
  type: 'retrying' | 'exhausted' | 'terminal'
}

/** WIRE §7.5: the `error` of a `session.error`, as far as Troupe reports them; an MCP server's names it, a credential's its ids. */
export type SessionError =
  | {
      type: 'unknown_error' | 'model_overloaded_error' | 'model_rate_limited_error' | 'model_request_failed_error' | 'tool_use_limit_reached_error'
      message: string
      retry_status: RetryStatus
    }
  | { type: 'mcp_connection_failed_error' | 'mcp_authentication_failed_error'; mcp_server_name: string; message: string; retry_status: RetryStatus }
  /** An `environment_variable` credential names a host the session's limited networking does not let the sandbox reach. */
  | { type: 'credential_host_unreachable_error'; credential_id: string; vault_id: string; message: string; retry_status: RetryStatus }

/** A grader pass's verdict (WIRE §7.2 `span.outcome_evaluation_end`). */
export type GraderResult = 'satisfied' | 'needs_revision' | 'max_iterations_reached' | 'failed' | 'interrupted'

// ------------------------------------------------------------------------------- client events (WIRE §7.1)

/**
 * A client event as stored: the event as sent, with its id, and `processed_at` null until the session handles it
 * (reads fold in the time it was marked handled: protocol/events.ts).
 */
interface ClientStamp {
  id: string
  processed_at: string | null
}

export interface UserMessageEvent extends ClientStamp {
  type: 'user.message'
  content: UserContent[]
}

export interface UserInterruptEvent extends ClientStamp {
  type: 'user.interrupt'
  /** The one thread to stop; absent or null: all of them. */
  session_thread_id?: string | null
}

export interface UserToolConfirmationEvent extends ClientStamp {
  type: 'user.tool_confirmation'
  tool_use_id: string
  result: 'allow' | 'deny'
  deny_message?: string | null
  session_thread_id?: string | null
}

export interface UserCustomToolResultEvent extends ClientStamp {
  type: 'user.custom_tool_result'
  custom_tool_use_id: string
  content?: ToolResultContent[]
  is_error?: boolean | null
  session_thread_id?: string | null
}

export interface UserToolResultEvent extends ClientStamp {
  type: 'user.tool_result'
  tool_use_id: string
  content?: ToolResultContent[]
  is_error?: boolean | null
  session_thread_id?: string | null
}

export interface UserDefineOutcomeEvent extends ClientStamp {
  type: 'user.define_outcome'
  description: string
  /** A File rubric is read as text before the event is stored (SPEC session create rule 5). */
  rubric: { type: 'text'; content: string } | FileSource
  /** Null when the client left it out: the default applies. */
  max_iterations: number | null
  /** Derived from the event's id (actors/session/outcomes.ts). */
  outcome_id: string
}

export interface SystemMessageEvent extends ClientStamp {
  type: 'system.message'
  content: TextBlock[]
}

export type ClientEvent =
  | UserMessageEvent
  | UserInterruptEvent
  | UserToolConfirmationEvent
  | UserCustomToolResultEvent
  | UserToolResultEvent
  | UserDefineOutcomeEvent
  | SystemMessageEvent

// ------------------------------------------------------------------------------ service events (WIRE §7.2)

/** A service event: its id, and when the session emitted it. */
interface ServiceStamp {
  id: string
  processed_at: string
}

/** A child thread's event copied to the session's own subject (actors/session/threads.ts) names its thread. */
interface CopiedFromThread {
  session_thread_id?: string
}

export interface AgentMessageEvent extends ServiceStamp {
  type: 'agent.message'
  content: Array<TextBlock | RedactedBlock>
}

export interface AgentThinkingEvent extends ServiceStamp {
  type: 'agent.thinking'
}

export interface AgentToolUseEvent extends ServiceStamp, CopiedFromThread {
  type: 'agent.tool_use'
  name: string
  input: Record<string, unknown>
  evaluated_permission?: 'allow' | 'ask' | 'deny'
  evaluation?: ToolEvaluation
  /**
   * Beyond the client's type: set on a web tool's use (`web_search`, `web_fetch`), which the provider ran inside the
   * model's response (the Messages API's `server_tool_use`, this its id). Such a use is never the client's to run or
   * answer: its `agent.tool_result` follows in the same response.
   */
  server_tool_use_id?: string
}

/** A tool of an MCP server (WIRE §7.2): `name` is the tool's name on its server, whatever name the model used. */
export interface AgentMcpToolUseEvent extends ServiceStamp, CopiedFromThread {
  type: 'agent.mcp_tool_use'
  mcp_server_name: string
  name: string
  input: Record<string, unknown>
  evaluated_permission?: 'allow' | 'ask' | 'deny'
  evaluation?: ToolEvaluation
}

export interface AgentMcpToolResultEvent extends ServiceStamp {
  type: 'agent.mcp_tool_result'
  mcp_tool_use_id: string
  content?: ToolResultContent[]
  is_error?: boolean | null
}

export interface AgentCustomToolUseEvent extends ServiceStamp, CopiedFromThread {
  type: 'agent.custom_tool_use'
  name: string
  input: Record<string, unknown>
}

export interface AgentToolResultEvent extends ServiceStamp {
  type: 'agent.tool_result'
  tool_use_id: string
  content?: ToolResultContent[]
  is_error?: boolean | null
  /**
   * Beyond the client's type: a web tool's result as the Messages API returned it (`content` is its readable form),
   * kept whole because the conversation must hand it back to the model as it came (its `encrypted_content`).
   */
  server_tool_result?: ServerToolResultBlock
}

/** The Messages API's result block of a server tool (`web_search_tool_result`, `web_fetch_tool_result`), as it came. */
export interface ServerToolResultBlock {
  type: 'web_search_tool_result' | 'web_fetch_tool_result'
  /** The `server_tool_use` block's id it answers. */
  tool_use_id: string
  /** The results, or an error object with `error_code`: the provider's shape, kept as it came. */
  content: unknown
}

export interface AgentThreadMessageSentEvent extends ServiceStamp {
  type: 'agent.thread_message_sent'
  to_session_thread_id: string
  to_agent_name?: string | null
  content: UserContent[]
}

export interface AgentThreadMessageReceivedEvent extends ServiceStamp {
  type: 'agent.thread_message_received'
  from_session_thread_id: string
  from_agent_name?: string | null
  content: UserContent[]
}

export interface SessionStatusRunningEvent extends ServiceStamp {
  type: 'session.status_running'
}

export interface SessionStatusRescheduledEvent extends ServiceStamp {
  type: 'session.status_rescheduled'
}

export interface SessionStatusTerminatedEvent extends ServiceStamp {
  type: 'session.status_terminated'
}

/** The fields of an idle status, the session's or a thread's. */
export interface IdleFields {
  stop_reason: StopReason
  stop_details: RefusalStopDetails | null
}

export interface SessionStatusIdleEvent extends ServiceStamp, IdleFields {
  type: 'session.status_idle'
}

export interface SessionErrorEvent extends ServiceStamp {
  type: 'session.error'
  error: SessionError
}

export interface SessionThreadCreatedEvent extends ServiceStamp {
  type: 'session.thread_created'
  session_thread_id: string
  agent_name: string
  workflow_run_id: string | null
}

/** A child thread's status names the thread (on its own subject, and copied to the session's). */
interface ThreadStamp extends ServiceStamp {
  session_thread_id: string
  agent_name: string
}

export interface SessionThreadStatusRunningEvent extends ThreadStamp {
  type: 'session.thread_status_running'
}

export interface SessionThreadStatusRescheduledEvent extends ThreadStamp {
  type: 'session.thread_status_rescheduled'
}

export interface SessionThreadStatusTerminatedEvent extends ThreadStamp {
  type: 'session.thread_status_terminated'
}

export interface SessionThreadStatusIdleEvent extends ThreadStamp, IdleFields {
  type: 'session.thread_status_idle'
}

/** Only the keys that changed (WIRE §7.2). */
export interface SessionUpdatedEvent extends ServiceStamp {
  type: 'session.updated'
  title?: string | null
  metadata?: Record<string, string>
  agent?: SessionAgent
  budget?: Budget | null
}

export interface SessionUsageEvent extends ServiceStamp {
  type: 'session.usage'
  /** The client's type has no null `server_tool_use`: Troupe's SessionUsage writes null until a server tool ran. */
  usage: SessionUsage
  budget: Budget | null
}

export interface SpanModelRequestStartEvent extends ServiceStamp {
  type: 'span.model_request_start'
}

export interface SpanModelRequestEndEvent extends ServiceStamp {
  type: 'span.model_request_end'
  model_request_start_id: string
  is_error: boolean | null
  model_usage: SpanModelUsage
}

export interface SpanOutcomeEvaluationStartEvent extends ServiceStamp {
  type: 'span.outcome_evaluation_start'
  outcome_id: string
  iteration: number
}

export interface SpanOutcomeEvaluationOngoingEvent extends ServiceStamp {
  type: 'span.outcome_evaluation_ongoing'
  outcome_id: string
  iteration: number
}

export interface SpanOutcomeEvaluationEndEvent extends ServiceStamp {
  type: 'span.outcome_evaluation_end'
  outcome_evaluation_start_id: string
  outcome_id: string
  iteration: number
  result: GraderResult
  explanation: string
  /** The grader request's usage as the provider reported it (the client's type has every count). */
  usage: ModelUsage
}

export type ServiceEvent =
  | AgentMessageEvent
  | AgentThinkingEvent
  | AgentToolUseEvent
  | AgentCustomToolUseEvent
  | AgentToolResultEvent
  | AgentMcpToolUseEvent
  | AgentMcpToolResultEvent
  | AgentThreadMessageSentEvent
  | AgentThreadMessageReceivedEvent
  | SessionStatusRunningEvent
  | SessionStatusRescheduledEvent
  | SessionStatusTerminatedEvent
  | SessionStatusIdleEvent
  | SessionErrorEvent
  | SessionThreadCreatedEvent
  | SessionThreadStatusRunningEvent
  | SessionThreadStatusRescheduledEvent
  | SessionThreadStatusTerminatedEvent
  | SessionThreadStatusIdleEvent
  | SessionUpdatedEvent
  | SessionUsageEvent
  | SpanModelRequestStartEvent
  | SpanModelRequestEndEvent
  | SpanOutcomeEvaluationStartEvent
  | SpanOutcomeEvaluationOngoingEvent
  | SpanOutcomeEvaluationEndEvent

// ---------------------------------------------------------------------------------------------- the union

/** Any stored session event: what the event list returns and a history replays. */
export type SessionEvent = ClientEvent | ServiceEvent
export type SessionEventType = SessionEvent['type']
export type ClientEventType = ClientEvent['type']
export type ServiceEventType = ServiceEvent['type']

/** The members of a union discriminated on `type`, by type: `ByType<U>[T]` is the member whose type is `T`. */
export type ByType<U extends { type: string }> = { [E in U as E['type']]: E }

/** The event of type `T` (of several types: any of them). */
export type EventOf<T extends SessionEventType> = ByType<SessionEvent>[T]

/** What the emitter of an event of type `T` gives: its fields but the type, id and time it is stamped with. */
export type PayloadOf<T extends SessionEventType> = EventOf<T> extends infer E ? (E extends unknown ? Omit<E, 'type' | 'id' | 'processed_at'> : never) : never
