import t from 'tap'
import type { BetaManagedAgentsSessionEvent, BetaManagedAgentsSessionEventType } from '@anthropic-ai/sdk/resources/beta/sessions/events'
import type { CLIENT_EVENT_TYPES, SERVER_EVENT_TYPES } from '../../protocol/events.js'
import type { ClientEventType, EventOf, ServiceEventType, SessionEventType } from '../../protocol/session-events.js'
import type { HandlerMap } from '../../actors/kit/index.js'
import type { Emitter } from '../../actors/session/turn/index.js'

/**
 * The session event union (protocol/session-events.ts) against the official client's types and the event type lists.
 * The checks are the compiler's (`npm run typecheck` reads this file); running it only says they passed.
 */

type Equal<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false

// Every type stored is one the client knows, listed where the list filter and the schemas take them from.
const known: Equal<Exclude<SessionEventType, BetaManagedAgentsSessionEventType>, never> = true
const clientTypes: Equal<ClientEventType, (typeof CLIENT_EVENT_TYPES)[number]> = true
const serviceTypes: Equal<Exclude<ServiceEventType, (typeof SERVER_EVENT_TYPES)[number]>, never> = true

/** The types whose events do not fit the client's type of them. */
type Outside = {
  [K in SessionEventType]: [EventOf<K>] extends [Extract<BetaManagedAgentsSessionEvent, { type: K }>] ? never : K
}[SessionEventType]

/**
 * Where the union is wider than the client's, and why (each the bytes Troupe stores, but the last):
 * - user.define_outcome: `processed_at` is null while the event waits in the mailbox (the client types it a string);
 * - the tool results: a `search_result` block a client sent without `citations` is stored so (the client's type
 *   requires it; the event schemas do not), and agent.tool_result and agent.mcp_tool_result share the block types;
 * - session.usage: `server_tool_use` is null until a server tool ran (the client's snapshot has it absent or set);
 * - span.outcome_evaluation_end: `usage` is the grader request's as the provider reported it (a count may be absent);
 * - session.updated: not the bytes but the agent snapshot's type (protocol/schemas/agent.ts), shaped unlike the
 *   client's (one tool config over every name where the client has one per tool).
 * Fields the client's types lack are not counted here (a type with more fields still fits): a web tool's
 * agent.tool_use carries `server_tool_use_id`, its agent.tool_result `server_tool_result` (docs/ARCHITECTURE.md, "Web tools").
 */
type Deviations =
  | 'user.define_outcome'
  | 'user.tool_result'
  | 'user.custom_tool_result'
  | 'agent.tool_result'
  | 'agent.mcp_tool_result'
  | 'session.usage'
  | 'span.outcome_evaluation_end'
  | 'session.updated'
const outside: Equal<Outside, Deviations> = true

/** Never called: what must not compile. */
function refused(events: Emitter) {
  // @ts-expect-error a field agent.message does not have
  events.emit('agent.message', { content: [], text: 'x' })
  // @ts-expect-error a field session.error needs
  events.emit('session.error', {})
  // @ts-expect-error a type nothing stores
  events.emit('agent.thread_context_compacted', {})
  // @ts-expect-error a handler map without an entry for one of its types
  const partial: HandlerMap<{ a: { type: 'a' }; b: { type: 'b' } }> = { a: () => undefined }
  return partial
}

t.test('the union, the type lists and the client agree where the compiler checked', async (t) => {
  t.ok(known && clientTypes && serviceTypes && outside)
  t.type(refused, 'function')
})
