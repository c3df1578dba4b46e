import t from 'tap'
import type { MessageParam } from '@anthropic-ai/sdk/resources/messages'
import { formatRequestTag, parseRequestTag, type RequestTag } from '../../protocol/events.js'
import type { SessionEvent } from '../../protocol/session-events.js'
import type { Session } from '../../protocol/session.js'
import { History } from '../../actors/session/history/history.js'
import { REMEMBERED_REQUESTS, RequestLog } from '../../actors/session/history/requests.js'
import { emptyUsage } from '../../actors/session/billing/usage.js'
import type { SessionRecord } from '../../actors/session/history/state.js'

/**
 * History replay, fed the events exactly as the session actor stores them (actors/session/actor/actor.ts: client
 * events with `processed_at: null` and a request tag; service events with `processed_at` and, on replay, the
 * client event ids they mark handled). Every service event here carries `processed_at`, so nothing depends on
 * the clock.
 */

const MODEL = 'test-model-unpriced'
const T0 = Date.parse('2026-01-01T00:00:00.000Z')
const at = (ms: number) => new Date(T0 + ms).toISOString()

function record(envType: 'cloud' | 'self_hosted' = 'cloud', session: Partial<Session> = {}): SessionRecord {
  const s = {
    id: 'sesn_01TEST',
    type: 'session',
    status: 'idle',
    agent: {
      id: 'agent_01TEST',
      type: 'agent',
      version: 1,
      name: 'a',
      description: null,
      system: null,
      model: { id: MODEL },
      tools: [],
      mcp_servers: [],
      skills: [],
      multiagent: null,
      execution_identity: { type: 'service_account' },
    },
    environment_id: 'env_01TEST',
    title: null,
    metadata: {},
    budget: null,
    resources: [],
    vault_ids: [],
    outcome_evaluations: [],
    stats: { active_seconds: 0, duration_seconds: 0 },
    usage: {} as Session['usage'],
    deployment_id: null,
    created_at: at(0),
    updated_at: at(0),
    archived_at: null,
    ...session,
  } as Session
  const env: SessionRecord['env'] =
    envType === 'cloud'
      ? ({ type: 'cloud', networking: { type: 'unrestricted' }, packages: {} } as unknown as SessionRecord['env'])
      : { type: 'self_hosted', scope: 'account' }
  return { session: s, env, totals: emptyUsage(), budget_created: false, budget_removed: false, running_since: null }
}

let n = 0
const nextId = () => `sevt_${String(++n).padStart(4, '0')}`

/** A client event as stored: not handled yet. */
const client = (type: string, fields: Record<string, unknown> = {}, id = nextId()): SessionEvent =>
  ({ type, id, ...fields, processed_at: null }) as SessionEvent
/** A service event as the actor emits it, `ms` after T0. */
const service = (type: string, ms: number, fields: Record<string, unknown> = {}, id = nextId()): SessionEvent =>
  ({ type, id, ...fields, processed_at: at(ms) }) as SessionEvent
const userMessage = (text: string, id?: string) => client('user.message', { content: [{ type: 'text', text }] }, id)
const usage = (input: number, output: number, extra: Record<string, unknown> = {}) => ({
  input_tokens: input,
  output_tokens: output,
  cache_creation_input_tokens: 0,
  cache_read_input_tokens: 0,
  speed: null,
  ...extra,
})
const ZERO_USAGE = usage(0, 0)

/** Tool results that answer no tool_use of the assistant message right before them (the API refuses those). */
function danglingToolResults(messages: MessageParam[]): string[] {
  const out: string[] = []
  messages.forEach((m, i) => {
    if (m.role !== 'user' || !Array.isArray(m.content)) return
    const prev = messages[i - 1]
    const uses = new Set(
      prev && prev.role === 'assistant' && Array.isArray(prev.content) ? prev.content.flatMap((b) => (b.type === 'tool_use' ? [b.id] : [])) : [],
    )
    for (const b of m.content) if (b.type === 'tool_result' && !uses.has(b.tool_use_id)) out.push(b.tool_use_id)
  })
  return out
}

/** The parts of History worth comparing between two rebuilds. */
const snapshot = (h: History) =>
  JSON.parse(
    JSON.stringify({
      status: h.status,
      stopReason: h.stopReason,
      messages: h.messages,
      pending: [...h.pending.keys()],
      open: [...h.open.values()],
      turnOpen: h.turnOpen,
      openSpan: h.openSpan,
      rec: h.rec,
    }),
  )

t.test('a fresh history takes its status from the record and holds nothing', async (t) => {
  const h = new History(record('cloud', { status: 'terminated' }))
  t.equal(h.status, 'terminated')
  t.equal(h.stopReason, null)
  t.same(h.messages, [])
  t.equal(h.pending.size, 0)
  t.equal(h.open.size, 0)
  t.equal(h.turnOpen, false)
  t.equal(h.openSpan, null)
  t.equal(h.needsModel(), false)
  t.equal(h.session, h.rec.session, "session is the record's session object")
})

t.test('one whole turn: message stored, handled, answered; idle end_turn', async (t) => {
  const h = new History(record())
  const msg = userMessage('hello')
  h.apply(msg)
  t.equal(h.status, 'idle', 'storing a client event changes no status')
  t.same([...h.pending.keys()], [msg.id], 'the message waits in the mailbox')
  t.same(h.messages, [], 'not part of the conversation until handled')
  t.equal(h.session.updated_at, at(0), 'a client event does not touch updated_at')

  h.apply(service('session.status_running', 1000), [msg.id])
  t.equal(h.status, 'running')
  t.equal(h.session.status, 'running', "the record's session follows")
  t.equal(h.turnOpen, true)
  t.equal(h.rec.running_since, T0 + 1000)
  t.equal(h.session.updated_at, at(1000))
  t.equal(h.pending.size, 0, 'handled: out of the mailbox')
  t.same(h.messages, [{ role: 'user', content: [{ type: 'text', text: 'hello' }] }])
  t.equal(h.needsModel(), true)

  const start = service('span.model_request_start', 1100)
  h.apply(start)
  t.equal(h.openSpan, start.id)
  h.apply(service('agent.thinking', 1200))
  h.apply(
    service('agent.message', 1300, {
      content: [
        { type: 'text', text: 'hi' },
        { type: 'image', source: {} },
        { type: 'text', text: 'there' },
      ],
    }),
  )
  t.same(h.messages.length, 1, 'the answer is a draft until its span ends')
  h.apply(service('span.model_request_end', 1400, { model_request_start_id: start.id, is_error: false, model_usage: usage(10, 5) }))
  t.equal(h.openSpan, null)
  t.same(
    h.messages[1],
    {
      role: 'assistant',
      content: [
        { type: 'text', text: 'hi' },
        { type: 'text', text: 'there' },
      ],
    },
    'text blocks only',
  )
  t.equal(h.needsModel(), false)
  t.equal(h.session.updated_at, at(1000), 'agent and span events do not touch updated_at')

  h.apply(service('session.status_idle', 6000, { stop_reason: { type: 'end_turn' }, stop_details: null }))
  t.equal(h.status, 'idle')
  t.equal(h.session.status, 'idle')
  t.same(h.stopReason, { type: 'end_turn' })
  t.equal(h.turnOpen, false)
  t.equal(h.rec.running_since, null)
  t.equal(h.rec.totals.active_ms, 5000, 'running from 1 s to 6 s')
  t.equal(h.session.updated_at, at(6000))
  t.match(h.rec.totals.entries, [{ model: MODEL, requests: 1, input_tokens: 10, output_tokens: 5 }])
})

t.test('rescheduled: running → rescheduling → running → idle counts active time once, from the first running', async (t) => {
  const h = new History(record())
  h.apply(service('session.status_running', 1000))
  h.apply(service('session.status_rescheduled', 2000))
  t.equal(h.status, 'rescheduling')
  t.equal(h.session.status, 'rescheduling')
  t.equal(h.rec.running_since, T0 + 1000, 'the clock keeps running through a reschedule')
  t.equal(h.turnOpen, true, 'the turn stays open')
  t.equal(h.session.updated_at, at(2000))
  h.apply(service('session.status_running', 3000))
  t.equal(h.rec.running_since, T0 + 1000, 'running again does not restart the clock')
  h.apply(service('session.status_idle', 4000, { stop_reason: { type: 'end_turn' } }))
  t.equal(h.rec.totals.active_ms, 3000)

  // A takeover's first event is session.status_rescheduled: it starts the clock when nothing was running.
  const r = new History(record())
  r.apply(service('session.status_rescheduled', 500))
  t.equal(r.status, 'rescheduling')
  t.equal(r.rec.running_since, T0 + 500)
  t.equal(r.turnOpen, false, 'rescheduled alone does not open a turn')
  r.apply(service('session.status_idle', 1500, { stop_reason: { type: 'retries_exhausted' } }))
  t.equal(r.rec.totals.active_ms, 1000)

  // Idle after idle adds nothing.
  r.apply(service('session.status_idle', 9000, { stop_reason: { type: 'end_turn' } }))
  t.equal(r.rec.totals.active_ms, 1000)
  // A clock that would run backwards adds nothing either.
  r.apply(service('session.status_running', 20_000))
  r.apply(service('session.status_idle', 10_000, { stop_reason: { type: 'end_turn' } }))
  t.equal(r.rec.totals.active_ms, 1000)
  t.equal(r.rec.running_since, null)
})

t.test('which idle stop reasons keep the turn open', async (t) => {
  const cases = [
    [{ type: 'end_turn' }, false],
    [{ type: 'requires_action', event_ids: ['sevt_x'] }, true],
    [{ type: 'budget_reached' }, true],
    [{ type: 'retries_exhausted' }, false],
    [{ type: 'refusal' }, false],
  ] as const
  for (const [stop, open] of cases) {
    const h = new History(record())
    h.apply(service('session.status_running', 0))
    h.apply(service('session.status_idle', 10, { stop_reason: stop }))
    t.equal(h.turnOpen, open, stop.type)
    t.same(h.stopReason, stop, `${stop.type}: stop reason kept`)
  }
})

t.test('session.status_terminated archives (archived_at = its processed_at), stops the clock, closes the turn', async (t) => {
  const h = new History(record())
  h.apply(service('session.status_running', 1000))
  h.apply(service('session.status_idle', 2000, { stop_reason: { type: 'budget_reached' } }))
  t.equal(h.turnOpen, true)
  h.apply(service('session.status_terminated', 3000))
  t.equal(h.status, 'terminated')
  t.equal(h.session.status, 'terminated')
  t.equal(h.session.archived_at, at(3000))
  t.equal(h.session.updated_at, at(3000))
  t.equal(h.turnOpen, false)
  t.equal(h.rec.totals.active_ms, 1000)

  // Terminated while running (an archive mid-turn) stops the clock there.
  const r = new History(record())
  r.apply(service('session.status_running', 1000))
  r.apply(service('session.status_terminated', 4000))
  t.equal(r.rec.running_since, null)
  t.equal(r.rec.totals.active_ms, 3000)

  // An archived_at the record already had is kept.
  const k = new History(record('cloud', { archived_at: at(50) }))
  k.apply(service('session.status_terminated', 9000))
  t.equal(k.session.archived_at, at(50))
})

t.test('usage totals: per model request, summed; cache writes split; errors count as requests', async (t) => {
  const h = new History(record())
  h.apply(service('session.status_running', 0))
  const s1 = service('span.model_request_start', 1)
  h.apply(s1)
  h.apply(
    service('span.model_request_end', 2, {
      model_request_start_id: s1.id,
      is_error: false,
      model_usage: usage(100, 20, {
        cache_read_input_tokens: 7,
        cache_creation_input_tokens: 30,
        cache_creation: { ephemeral_5m_input_tokens: 10, ephemeral_1h_input_tokens: 15 },
      }),
    }),
  )
  const s2 = service('span.model_request_start', 3)
  h.apply(s2)
  h.apply(
    service('span.model_request_end', 4, {
      model_request_start_id: s2.id,
      is_error: false,
      model_usage: usage(1, 2, { cache_creation_input_tokens: 4, server_tool_use: { web_search_requests: 2, web_fetch_requests: 1 } }),
    }),
  )
  const s3 = service('span.model_request_start', 5)
  h.apply(s3)
  h.apply(service('span.model_request_end', 6, { model_request_start_id: s3.id, is_error: true, model_usage: ZERO_USAGE }))
  const s4 = service('span.model_request_start', 7)
  h.apply(s4)
  h.apply(service('span.model_request_end', 8, { model_request_start_id: s4.id, is_error: true }))
  t.equal(h.rec.totals.entries.length, 1, 'one model, one tier')
  t.same(h.rec.totals.entries[0], {
    model: MODEL,
    speed: 'standard',
    long_context: false,
    us_only: false,
    requests: 3, // the failed request with ZERO_USAGE counts; the one without model_usage does not
    input_tokens: 101,
    output_tokens: 22,
    cache_read_input_tokens: 7,
    cache_creation_5m_input_tokens: 10 + 5 + 4, // 30 − 10 − 15 unaccounted for counts as 5-minute writes
    cache_creation_1h_input_tokens: 15,
    web_search_requests: 2,
    web_fetch_requests: 1,
  })

  // A fast request and a US-only one are their own tiers.
  const s5 = service('span.model_request_start', 9)
  h.apply(s5)
  h.apply(
    service('span.model_request_end', 10, { model_request_start_id: s5.id, is_error: false, model_usage: usage(1, 1, { speed: 'fast', inference_geo: 'us' }) }),
  )
  t.equal(h.rec.totals.entries.length, 2)
  t.match(h.rec.totals.entries[1], { speed: 'fast', us_only: true, requests: 1 })

  // The model counted is the session's agent model at the time (a session.updated may change it).
  h.apply(service('session.updated', 11, { agent: { ...h.session.agent, model: { id: 'other-model' } } }))
  const s6 = service('span.model_request_start', 12)
  h.apply(s6)
  h.apply(service('span.model_request_end', 13, { model_request_start_id: s6.id, is_error: false, model_usage: usage(3, 3) }))
  t.same(
    h.rec.totals.entries.map((e) => e.model),
    [MODEL, MODEL, 'other-model'],
  )
})

t.test('liveTotals adds the running stretch so far, never a negative one', async (t) => {
  const h = new History(record())
  t.equal(h.liveTotals(T0 + 99_999).active_ms, 0, 'not running: the stored totals')
  h.apply(service('session.status_running', 1000))
  t.equal(h.liveTotals(T0 + 3500).active_ms, 2500)
  t.equal(h.liveTotals(T0).active_ms, 0, 'a clock behind running_since adds nothing')
  t.equal(h.rec.totals.active_ms, 0, 'liveTotals does not store anything')
  h.apply(service('session.status_idle', 2000, { stop_reason: { type: 'end_turn' } }))
  t.equal(h.liveTotals(T0 + 50_000).active_ms, 1000)
})

t.test('built-in tool use (cloud): open until its agent.tool_result, which joins the conversation', async (t) => {
  const h = new History(record('cloud'))
  const msg = userMessage('list files')
  h.apply(msg)
  h.apply(service('session.status_running', 0), [msg.id])
  const s = service('span.model_request_start', 1)
  h.apply(s)
  const use = service('agent.tool_use', 2, { name: 'bash', input: { command: 'ls' }, evaluated_permission: 'allow' })
  const ask = service('agent.tool_use', 2, { name: 'write', input: { path: 'x' }, evaluated_permission: 'ask' })
  h.apply(use)
  h.apply(ask)
  h.apply(service('span.model_request_end', 3, { model_request_start_id: s.id, is_error: false, model_usage: usage(1, 1) }))
  t.same(
    [...h.open.values()],
    [
      { eventId: use.id, kind: 'builtin', name: 'bash', input: { command: 'ls' }, ask: false },
      { eventId: ask.id, kind: 'builtin', name: 'write', input: { path: 'x' }, ask: true },
    ],
  )
  t.same(h.messages[1], {
    role: 'assistant',
    content: [
      { type: 'tool_use', id: use.id, name: 'bash', input: { command: 'ls' } },
      { type: 'tool_use', id: ask.id, name: 'write', input: { path: 'x' } },
    ],
  })
  t.equal(h.needsModel(), false, 'tools first')

  h.apply(service('agent.tool_result', 4, { tool_use_id: use.id, content: [{ type: 'text', text: 'a\nb' }], is_error: false }))
  t.same([...h.open.keys()], [ask.id])
  t.same(
    h.messages[2],
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: [{ type: 'text', text: 'a\nb' }] }] },
    'is_error only when true',
  )

  h.apply(service('session.status_idle', 5, { stop_reason: { type: 'requires_action', event_ids: [ask.id] } }))
  t.equal(h.turnOpen, true, 'parked on the confirmation')

  // The confirmation is a client event: it counts only once handled.
  const confirm = client('user.tool_confirmation', { tool_use_id: ask.id, result: 'deny', deny_message: 'no writes' })
  h.apply(confirm)
  t.equal(h.open.get(ask.id)!.confirmation, undefined, 'stored, not handled yet')
  h.apply(service('session.status_running', 6), [confirm.id])
  t.same(h.open.get(ask.id)!.confirmation, { result: 'deny', deny_message: 'no writes' })
  h.apply(service('agent.tool_result', 7, { tool_use_id: ask.id, content: [{ type: 'text', text: 'no writes' }], is_error: true }))
  t.equal(h.open.size, 0)
  t.same(
    h.messages[2],
    {
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: use.id, content: [{ type: 'text', text: 'a\nb' }] },
        { type: 'tool_result', tool_use_id: ask.id, content: [{ type: 'text', text: 'no writes' }], is_error: true },
      ],
    },
    'results of one response go into one user message',
  )
  t.equal(h.needsModel(), true)
  t.same(danglingToolResults(h.messages), [])

  // A result for a tool use that is not open changes nothing.
  const before = snapshot(h)
  h.apply(service('agent.tool_result', 8, { tool_use_id: 'sevt_unknown', content: [] }))
  h.apply(service('agent.tool_result', 9, { tool_use_id: use.id, content: [] }))
  t.same(snapshot(h), before)
})

t.test("a self-hosted session: every agent.tool_use is the client's; an always_ask one waits for its confirmation", async (t) => {
  const h = new History(record('self_hosted'))
  const s = service('span.model_request_start', 1)
  h.apply(s)
  const use = service('agent.tool_use', 2, { name: 'bash', input: {}, evaluated_permission: 'ask' })
  h.apply(use)
  h.apply(service('span.model_request_end', 3, { model_request_start_id: s.id, is_error: false }))
  t.same(h.open.get(use.id), { eventId: use.id, kind: 'client', name: 'bash', input: {}, ask: true })
  const result = client('user.tool_result', { tool_use_id: use.id, content: [{ type: 'text', text: 'done' }] })
  h.apply(result)
  t.ok(h.open.has(use.id), 'still open while the result waits in the mailbox')
  h.handled([result.id])
  t.equal(h.open.size, 0)
  t.same(h.messages.at(-1), { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: [{ type: 'text', text: 'done' }] }] })
})

t.test('custom tools park the turn until user.custom_tool_result is handled', async (t) => {
  const h = new History(record('cloud'))
  const msg = userMessage('weather?')
  h.apply(msg)
  h.apply(service('session.status_running', 0), [msg.id])
  const s = service('span.model_request_start', 1)
  h.apply(s)
  h.apply(service('agent.message', 2, { content: [{ type: 'text', text: 'checking' }] }))
  const use = service('agent.custom_tool_use', 3, { name: 'get_weather', input: { city: 'Oslo' } })
  h.apply(use)
  h.apply(service('span.model_request_end', 4, { model_request_start_id: s.id, is_error: false, model_usage: usage(5, 5) }))
  t.same(h.open.get(use.id), { eventId: use.id, kind: 'custom', name: 'get_weather', input: { city: 'Oslo' }, ask: false })
  t.same(h.messages[1], {
    role: 'assistant',
    content: [
      { type: 'text', text: 'checking' },
      { type: 'tool_use', id: use.id, name: 'get_weather', input: { city: 'Oslo' } },
    ],
  })
  h.apply(service('session.status_idle', 5, { stop_reason: { type: 'requires_action', event_ids: [use.id] } }))
  t.equal(h.status, 'idle')
  t.equal(h.turnOpen, true)

  const result = client('user.custom_tool_result', { custom_tool_use_id: use.id, content: [{ type: 'text', text: 'sunny' }], is_error: null })
  const note = client('system.message', {
    content: [
      { type: 'text', text: 'line 1' },
      { type: 'text', text: 'line 2' },
    ],
  })
  h.apply(result)
  h.apply(note)
  t.same([...h.pending.keys()], [result.id, note.id])
  t.ok(h.open.has(use.id), 'parked until handled')
  // The actor marks them handled with the next event it stores (here the _processed record when nothing follows).
  h.apply({ type: '_processed', ids: [result.id, note.id], processed_at: at(6) } as unknown as SessionEvent)
  t.equal(h.pending.size, 0)
  t.equal(h.open.size, 0)
  t.equal(h.status, 'idle', '_processed is not a status change')
  t.equal(h.session.updated_at, at(5), '_processed does not touch updated_at')
  t.same(h.messages[2], {
    role: 'user',
    content: [
      { type: 'tool_result', tool_use_id: use.id, content: [{ type: 'text', text: 'sunny' }] },
      { type: 'text', text: '<system-message>\nline 1\nline 2\n</system-message>' },
    ],
  })
  t.equal(h.needsModel(), true)
  t.same(danglingToolResults(h.messages), [])
})

t.test('a user.message handled while tool uses are open abandons them with error results first', async (t) => {
  const h = new History(record('cloud'))
  const s = service('span.model_request_start', 1)
  h.apply(s)
  const a = service('agent.custom_tool_use', 2, { name: 'c', input: {} })
  const b = service('agent.tool_use', 2, { name: 'bash', input: {}, evaluated_permission: 'ask' })
  h.apply(a)
  h.apply(b)
  h.apply(service('span.model_request_end', 3, { model_request_start_id: s.id, is_error: false }))
  const msg = userMessage('never mind')
  h.apply(msg)
  h.apply(service('session.status_running', 4), [msg.id])
  t.equal(h.open.size, 0)
  const last = h.messages.at(-1)!
  t.equal(last.role, 'user')
  t.match(last.content, [
    { type: 'tool_result', tool_use_id: a.id, is_error: true, content: [{ type: 'text', text: /abandoned/ }] },
    { type: 'tool_result', tool_use_id: b.id, is_error: true },
    { type: 'text', text: 'never mind' },
  ])
  t.equal((last.content as unknown[]).length, 3)
  t.same(danglingToolResults(h.messages), [])
})

t.test('user.interrupt handled: open tool uses get error results, the draft is dropped', async (t) => {
  const h = new History(record('cloud'))
  const s = service('span.model_request_start', 1)
  h.apply(s)
  const use = service('agent.tool_use', 2, { name: 'bash', input: {} })
  h.apply(use)
  h.apply(service('span.model_request_end', 3, { model_request_start_id: s.id, is_error: false }))
  const s2 = service('span.model_request_start', 4)
  h.apply(s2)
  h.apply(service('agent.message', 5, { content: [{ type: 'text', text: 'partial' }] }))
  const stop = client('user.interrupt')
  h.apply(stop)
  t.equal(h.open.size, 1, 'an interrupt only stored changes nothing')
  h.apply(service('span.model_request_end', 6, { model_request_start_id: s2.id, is_error: true, model_usage: ZERO_USAGE }), [stop.id])
  t.equal(h.open.size, 0)
  t.equal(h.openSpan, null)
  t.same(
    h.messages.map((m) => m.role),
    ['assistant', 'user'],
    'the interrupted draft never became a message',
  )
  t.match(h.messages[1]!.content, [{ type: 'tool_result', tool_use_id: use.id, is_error: true }])
})

t.test('a span that ends in error drops its draft; a span with nothing in it adds no message', async (t) => {
  const h = new History(record())
  const s = service('span.model_request_start', 1)
  h.apply(s)
  h.apply(service('agent.message', 2, { content: [{ type: 'text', text: 'lost' }] }))
  h.apply(service('span.model_request_end', 3, { model_request_start_id: s.id, is_error: true, model_usage: ZERO_USAGE }))
  t.same(h.messages, [])
  const s2 = service('span.model_request_start', 4)
  h.apply(s2)
  h.apply(service('span.model_request_end', 5, { model_request_start_id: s2.id, is_error: false, model_usage: usage(1, 0) }))
  t.same(h.messages, [], 'an empty response adds no assistant message')
  // agent.message outside a span still lands in the next message (a draft is started on demand).
  h.apply(service('agent.message', 6, { content: [{ type: 'text', text: 'x' }] }))
  const s3 = service('span.model_request_start', 7)
  h.apply(s3)
  t.equal(h.openSpan, s3.id)
  h.apply(service('span.model_request_end', 8, { model_request_start_id: s3.id, is_error: false }))
  t.same(h.messages, [], 'a span start resets the draft')
})

t.test('handled(): ids in the order given, unknown or repeated ids ignored; consecutive user content merges', async (t) => {
  const h = new History(record())
  const m1 = userMessage('one')
  const m2 = userMessage('two')
  h.apply(m1)
  h.apply(m2)
  h.handled(['sevt_nope', m2.id, m1.id, m2.id])
  t.equal(h.pending.size, 0)
  t.same(h.messages, [
    {
      role: 'user',
      content: [
        { type: 'text', text: 'two' },
        { type: 'text', text: 'one' },
      ],
    },
  ])
  // apply(ev, processed) handles before applying ev.
  const m3 = userMessage('three')
  h.apply(m3)
  const end = service('session.status_idle', 1, { stop_reason: { type: 'end_turn' } })
  h.apply(end, [m3.id])
  t.equal((h.messages[0]!.content as unknown[]).length, 3)
})

t.test('session.updated changes the fields it carries and nothing else', async (t) => {
  const h = new History(record('cloud', { title: 'old', metadata: { a: '1' }, budget: { type: 'limit', max_list_cost: { amount: '100', currency: 'USD' } } }))
  h.rec.budget_created = true
  const agent = h.session.agent
  h.apply(service('session.updated', 1000, { title: 'new' }))
  t.equal(h.session.title, 'new')
  t.same(h.session.metadata, { a: '1' })
  t.equal(h.session.agent, agent)
  t.equal(h.session.updated_at, at(1000))
  t.equal(h.status, 'idle', 'an update is no status change')

  h.apply(service('session.updated', 2000, { title: null, metadata: { b: '2' } }))
  t.equal(h.session.title, null)
  t.same(h.session.metadata, { b: '2' }, 'metadata is replaced by the stored result')

  const raised = { type: 'limit', max_list_cost: { amount: '500', currency: 'USD' } }
  h.apply(service('session.updated', 3000, { budget: raised }))
  t.same(h.session.budget, raised)
  t.equal(h.rec.budget_removed, false)
  h.apply(service('session.updated', 4000, { budget: null }))
  t.equal(h.session.budget, null)
  t.equal(h.rec.budget_removed, true, 'a removed budget is remembered')
  h.apply(service('session.updated', 5000, { budget: raised }))
  t.equal(h.rec.budget_removed, true, 'and stays remembered')
})

t.test('events that change no state: session.error, session.usage, agent.thinking', async (t) => {
  const h = new History(record())
  h.apply(service('session.status_running', 10))
  const before = snapshot(h)
  h.apply(service('session.error', 20, { error: { type: 'unknown_error', message: 'x', retry_status: { type: 'retrying' } } }))
  h.apply(service('session.usage', 30, { usage: {}, budget: null }))
  h.apply(service('agent.thinking', 40))
  t.same(snapshot(h), before)
})

t.test('live and replayed application agree', async (t) => {
  const msg = userMessage('go', 'sevt_msg')
  const tag: RequestTag = { key: 'k:abc', index: 0, count: 1, hash: 'h1' }
  const s = service('span.model_request_start', 2, {}, 'sevt_s')
  const use = service('agent.custom_tool_use', 3, { name: 'c', input: { q: 1 } }, 'sevt_use')
  const steps: Array<{ ev: SessionEvent; processed?: string[]; request?: RequestTag }> = [
    { ev: msg, request: tag },
    { ev: service('session.status_running', 1, {}, 'sevt_run'), processed: [msg.id] },
    { ev: s },
    { ev: use },
    { ev: service('span.model_request_end', 4, { model_request_start_id: s.id, is_error: false, model_usage: usage(3, 4) }, 'sevt_end') },
    { ev: service('session.status_idle', 5, { stop_reason: { type: 'requires_action', event_ids: [use.id] } }, 'sevt_idle') },
  ]
  const replayed = new History(record())
  for (const st of steps) replayed.apply(st.ev, st.processed, st.request)
  // The actor's own path: handled() as it takes events from the mailbox, then apply() of the next event.
  const live = new History(record())
  for (const st of steps) {
    if (st.processed) live.handled(st.processed)
    live.apply(st.ev, undefined, st.request)
  }
  t.same(snapshot(live), snapshot(replayed))
  t.same(live.requests.get('k:abc'), replayed.requests.get('k:abc'))
})

t.test('request log: rebuilt from Troupe-Request tags on replay', async (t) => {
  const h = new History(record())
  const m1 = userMessage('a')
  const m2 = client('user.interrupt')
  h.apply(m1, undefined, parseRequestTag('fp1 0/3 k:my-key'))
  h.apply(m2, undefined, parseRequestTag('fp1 1/3 k:my-key'))
  t.same(h.requests.get('k:my-key'), { hash: 'fp1', ids: [m1.id, m2.id, undefined] }, 'a request stored in part: the rest is missing')
  t.equal(h.requests.get('k:other'), undefined)
  const m3 = userMessage('c')
  h.apply(m3, undefined, parseRequestTag('fp1 2/3 k:my-key'))
  t.same(h.requests.get('k:my-key'), { hash: 'fp1', ids: [m1.id, m2.id, m3.id] })

  // A service event never carries a tag; one without a tag notes nothing.
  h.apply(service('session.status_running', 1), [m1.id])
  t.same(h.requests.get('k:my-key')!.ids, [m1.id, m2.id, m3.id])

  // The same key with another fingerprint (a request refused as a reuse is never stored, but a replay may see
  // the key reused after it was forgotten): the newer request replaces the older.
  const m4 = userMessage('d')
  h.apply(m4, undefined, parseRequestTag('fp2 0/1 k:my-key'))
  t.same(h.requests.get('k:my-key'), { hash: 'fp2', ids: [m4.id] })

  // r: keys (no Idempotency-Key) are remembered the same way.
  const m5 = userMessage('e')
  h.apply(m5, undefined, parseRequestTag('fp3 0/1 r:req_01ABC'))
  t.same(h.requests.get('r:req_01ABC'), { hash: 'fp3', ids: [m5.id] })
})

t.test('request tags: format and parse', async (t) => {
  const tag: RequestTag = { hash: 'AbC-_123', index: 2, count: 5, key: 'k:some/key=with:chars' }
  t.equal(formatRequestTag(tag), 'AbC-_123 2/5 k:some/key=with:chars')
  t.same(parseRequestTag(formatRequestTag(tag)), tag)
  t.same(parseRequestTag('h 0/1 r:req_1'), { hash: 'h', index: 0, count: 1, key: 'r:req_1' })
  for (const bad of [undefined, '', 'h 1/1 k:x', 'h 2/1 k:x', 'h 0/1', 'h 0/1 k:a b', 'h -1/1 k:x', 'h a/1 k:x', ' h 0/1 k:x', 'h 0/1 k:x ']) {
    t.equal(parseRequestTag(bad), undefined, `refused: ${JSON.stringify(bad)}`)
  }
})

t.test('RequestLog keeps the last REMEMBERED_REQUESTS requests, oldest out first', async (t) => {
  t.equal(REMEMBERED_REQUESTS, 1000)
  const log = new RequestLog()
  for (let i = 0; i < REMEMBERED_REQUESTS; i++) log.note({ key: `k:${i}`, hash: 'h', index: 0, count: 1 }, `sevt_${i}`)
  t.ok(log.get('k:0'))
  // Noting another event of a known request does not make it newer.
  log.note({ key: 'k:0', hash: 'h', index: 0, count: 1 }, 'sevt_0_again')
  t.same(log.get('k:0'), { hash: 'h', ids: ['sevt_0_again'] })
  // A replaced request (another fingerprint) is new again.
  log.note({ key: 'k:1', hash: 'h2', index: 0, count: 1 }, 'sevt_1b')
  log.note({ key: 'k:new', hash: 'h', index: 0, count: 1 }, 'sevt_new')
  t.equal(log.get('k:0'), undefined, 'the oldest went')
  t.same(log.get('k:1'), { hash: 'h2', ids: ['sevt_1b'] }, 'the replaced one stayed')
  t.ok(log.get('k:2'))
  t.ok(log.get('k:new'))
  log.note({ key: 'k:new2', hash: 'h', index: 0, count: 1 }, 'x')
  t.equal(log.get('k:2'), undefined)
  t.ok(log.get('k:3'))
  t.ok(log.get('k:1'), 'k:1 moved to the back when it was replaced')
})

t.test('a takeover that closes a span left open leaves no tool_result without its tool_use', async (t) => {
  // Found by this test: an error span end dropped the draft, stored tool uses included, and the error results that
  // followed answered tool uses the conversation no longer held.
  // Stored by the host that died (or whose append failed) after agent.tool_use but before span.model_request_end.
  const h = new History(record('cloud'))
  const msg = userMessage('run it')
  h.apply(msg)
  h.apply(service('session.status_running', 0), [msg.id])
  const s = service('span.model_request_start', 1)
  h.apply(s)
  const use = service('agent.tool_use', 2, { name: 'bash', input: { command: 'rm -rf /tmp/x' }, evaluated_permission: 'allow' })
  h.apply(use)
  // What the new owner's recovery emits (recovery.ts, Recovery.resume): the span closed as an error, then an error
  // result for each built-in tool use still open.
  h.apply(service('session.status_rescheduled', 3))
  h.apply(service('span.model_request_end', 4, { model_request_start_id: s.id, is_error: true, model_usage: ZERO_USAGE }))
  for (const o of [...h.open.values()]) {
    h.apply(service('agent.tool_result', 5, { tool_use_id: o.eventId, content: [{ type: 'text', text: 'not run again' }], is_error: true }))
  }
  t.equal(h.needsModel(), true, 'the turn goes on to the model')
  t.same(danglingToolResults(h.messages), [], 'every tool_result answers a tool_use of the assistant message before it')
})

t.test('Skill launches: recorded from stored results (a replay finds them), errors and other sessions not', async (t) => {
  const rec = record('cloud')
  rec.skills = [{ skill_id: 'skill_1', version: '1', name: 'pdf', description: 'd', object: 'skill_1.X', expanded_bytes: 1 }]
  const h = new History(rec)
  const msg = userMessage('go')
  h.apply(msg)
  h.apply(service('session.status_running', 0), [msg.id])
  const launch = (ms: number, skill: string, result: { text: string; is_error: boolean }) => {
    const s = service('span.model_request_start', ms)
    h.apply(s)
    const use = service('agent.tool_use', ms + 1, { name: 'Skill', input: { skill }, evaluated_permission: 'allow' })
    h.apply(use)
    h.apply(service('span.model_request_end', ms + 2, { model_request_start_id: s.id, is_error: false, model_usage: ZERO_USAGE }))
    h.apply(service('agent.tool_result', ms + 3, { tool_use_id: use.id, content: [{ type: 'text', text: result.text }], is_error: result.is_error }))
  }
  launch(10, 'pdf', { text: 'Launching skill: pdf', is_error: false })
  launch(20, 'nope', { text: 'No skill is named "nope"', is_error: true })
  launch(30, 'pdf', { text: 'Launching skill: pdf', is_error: false })
  t.same(h.activations, [
    { name: 'pdf', message: 2 },
    { name: 'pdf', message: 6 },
  ])
  t.same(
    h.messages[2],
    {
      role: 'user',
      content: [{ type: 'tool_result', tool_use_id: (h.messages[1]!.content as any[])[0].id, content: [{ type: 'text', text: 'Launching skill: pdf' }] }],
    },
    'the history itself holds no injected text',
  )

  // Without skills, a tool named Skill is whatever the agent made of it: no launch.
  const plain = new History(record('cloud'))
  plain.apply(msg)
  plain.apply(service('session.status_running', 0), [msg.id])
  const s = service('span.model_request_start', 1)
  plain.apply(s)
  const use = service('agent.tool_use', 2, { name: 'Skill', input: { skill: 'pdf' } })
  plain.apply(use)
  plain.apply(service('span.model_request_end', 3, { model_request_start_id: s.id, is_error: false, model_usage: ZERO_USAGE }))
  plain.apply(service('agent.tool_result', 4, { tool_use_id: use.id, content: [], is_error: false }))
  t.same(plain.activations, [])
})

t.test("web tool uses and results (the provider's): assistant blocks as the API sent them, never open, in a self-hosted session too", async (t) => {
  for (const envType of ['cloud', 'self_hosted'] as const) {
    const h = new History(record(envType))
    const msg = userMessage('search')
    h.apply(msg)
    h.apply(service('session.status_running', 1000), [msg.id])
    const span = service('span.model_request_start', 1000)
    h.apply(span)
    const block = {
      type: 'web_search_tool_result',
      tool_use_id: 'srvtoolu_01A',
      content: [{ type: 'web_search_result', url: 'https://a/', title: 'A', encrypted_content: 'E', page_age: null }],
    }
    const use = service('agent.tool_use', 1100, {
      name: 'web_search',
      input: { query: 'q' },
      evaluated_permission: 'allow',
      server_tool_use_id: 'srvtoolu_01A',
    })
    h.apply(service('agent.message', 1050, { content: [{ type: 'text', text: 'Looking.' }] }))
    h.apply(use)
    h.apply(service('agent.tool_result', 1100, { tool_use_id: use.id, content: [], server_tool_result: block }))
    h.apply(service('agent.message', 1150, { content: [{ type: 'text', text: 'Found.' }] }))
    h.apply(
      service('span.model_request_end', 1200, {
        model_request_start_id: span.id,
        is_error: false,
        model_usage: usage(10, 5, { server_tool_use: { web_search_requests: 1 } }),
      }),
    )
    t.equal(h.open.size, 0, `${envType}: nothing waits on it`)
    t.same(h.messages.at(-1), {
      role: 'assistant',
      content: [
        { type: 'text', text: 'Looking.' },
        { type: 'server_tool_use', id: 'srvtoolu_01A', name: 'web_search', input: { query: 'q' } },
        block,
        { type: 'text', text: 'Found.' },
      ],
    })
    t.equal(h.needsModel(), false)
    t.match(h.rec.totals.entries[0], { web_search_requests: 1, web_fetch_requests: 0 })
  }
})

t.test('a failed span kept for its client tool use drops a web tool use whose result was never stored', async (t) => {
  const h = new History(record())
  const msg = userMessage('go')
  h.apply(msg)
  h.apply(service('session.status_running', 1000), [msg.id])
  const span = service('span.model_request_start', 1000)
  h.apply(span)
  const done = service('agent.tool_use', 1100, { name: 'web_fetch', input: { url: 'https://a/' }, server_tool_use_id: 'srvtoolu_01Done' })
  h.apply(done)
  h.apply(
    service('agent.tool_result', 1100, {
      tool_use_id: done.id,
      server_tool_result: {
        type: 'web_fetch_tool_result',
        tool_use_id: 'srvtoolu_01Done',
        content: { type: 'web_fetch_tool_result_error', error_code: 'unavailable' },
      },
    }),
  )
  h.apply(service('agent.tool_use', 1100, { name: 'web_search', input: { query: 'q' }, server_tool_use_id: 'srvtoolu_01Lost' }))
  const bash = service('agent.tool_use', 1100, { name: 'bash', input: { command: 'ls' }, evaluated_permission: 'allow' })
  h.apply(bash)
  h.apply(service('span.model_request_end', 1200, { model_request_start_id: span.id, is_error: true, model_usage: ZERO_USAGE }))
  t.same(
    (h.messages.at(-1)!.content as Array<{ type: string; id?: string; tool_use_id?: string }>).map((b) => b.id ?? b.tool_use_id),
    ['srvtoolu_01Done', 'srvtoolu_01Done', bash.id],
  )
  t.same([...h.open.keys()], [bash.id])
})
