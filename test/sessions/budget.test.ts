import t, { type Test } from 'tap'
import type { ModelUsage } from '../../actors/session/billing/usage.js'
import { failure } from '../agents/_util.js'
import { agentAndEnv, collect, isIdle, sessionStack } from './_helpers.js'

/**
 * Usage, list cost and budgets of sessions (issue point 6): usage sums every model request, list_cost follows
 * the price table, a budget pauses the turn before the next model request and raising or removing it resumes
 * the turn; the update rules of SPEC "Update body rules" 5.
 */

const s = await sessionStack()

const MODEL = 'claude-sonnet-4-5'
const TOOLSET = [{ type: 'agent_toolset_20260401' }]
const LOOKUP = { type: 'custom', name: 'lookup', description: 'Looks a key up.', input_schema: { type: 'object' } }
const limit = (cents: number) => ({ type: 'limit', max_list_cost: { amount: String(cents), currency: 'USD' } })
/** 10,000 input tokens on Sonnet 4.5 ($3/MTok) cost exactly 3 cents: past a 1-cent budget in one request. */
const THREE_CENTS = { input_tokens: 10_000, output_tokens: 0 }

async function newSession(agent: Record<string, unknown> = {}, body: Record<string, unknown> = {}) {
  const { agent: a, env: e } = await agentAndEnv(s.client, { model: MODEL, ...agent })
  return s.client.beta.sessions.create({ agent: a.id, environment_id: e.id, ...body } as any)
}

/** Opens the live stream, runs `act`, and collects until the session goes idle. */
async function step(id: string, act: () => Promise<unknown>, until: (e: any, all: any[]) => boolean = isIdle) {
  const stream = await s.client.beta.sessions.events.stream(id)
  await act()
  return collect(stream, until)
}
const send =
  (id: string, ...events: any[]) =>
  () =>
    s.client.beta.sessions.events.send(id, { events } as any)
const say = (text: string) => ({ type: 'user.message', content: [{ type: 'text', text }] })
const history = async (id: string) => (await s.client.beta.sessions.events.list(id, { limit: 1000 } as any)).data as any[]

/** Pauses a 1-cent session at the ceiling: the first request (a bash call) costs 3 cents; the second is never made. */
async function pausedAtBudget(t: Test) {
  const session = await newSession({ tools: TOOLSET }, { budget: limit(1) })
  const base = s.model.requests.length
  s.model.enqueue({ steps: [{ type: 'tool_use', name: 'bash', input: { command: 'echo spent' } }], usage: THREE_CENTS })
  const events = await step(session.id, send(session.id, say('spend')))
  t.equal(s.model.requests.length, base + 1, 'the second model request is not made')
  t.same(events.at(-1).stop_reason, { type: 'budget_reached' })
  return { session, base, events }
}

t.test('usage sums every model request and list_cost follows the price table', async (t) => {
  const session = await newSession({ tools: TOOLSET })
  type Counts = Required<Pick<ModelUsage, 'input_tokens' | 'output_tokens'>> & { cache_read_input_tokens: number; cache_creation_input_tokens: number }
  const scripted: Counts[] = [
    { input_tokens: 123_457, output_tokens: 20_011, cache_read_input_tokens: 50_003, cache_creation_input_tokens: 40_009 },
    { input_tokens: 7_001, output_tokens: 3_333, cache_read_input_tokens: 99_999, cache_creation_input_tokens: 1_234 },
    { input_tokens: 77_777, output_tokens: 55, cache_read_input_tokens: 0, cache_creation_input_tokens: 10_000 },
  ]
  s.model.enqueue(
    { steps: [{ type: 'tool_use', name: 'bash', input: { command: 'true' } }], usage: scripted[0] },
    { steps: [{ type: 'text', text: 'first turn over' }], usage: scripted[1] },
  )
  const first = await step(session.id, send(session.id, say('one')))
  s.model.enqueue({ steps: [{ type: 'text', text: 'second turn over' }], usage: scripted[2] })
  const second = await step(session.id, send(session.id, say('two')))

  // Each request's usage is on its span end, as the model reported it.
  const spans = [...first, ...second].filter((e) => e.type === 'span.model_request_end')
  t.match(
    spans.map((e) => e.model_usage),
    scripted.map((u) => ({ ...u, speed: 'standard' })),
  )

  const got = await s.client.beta.sessions.retrieve(session.id)
  const sum = (k: keyof Counts) => scripted.reduce((n, u) => n + u[k], 0)
  t.equal(got.usage.input_tokens, sum('input_tokens'))
  t.equal(got.usage.output_tokens, sum('output_tokens'))
  t.equal(got.usage.cache_read_input_tokens, sum('cache_read_input_tokens'))
  t.same(got.usage.cache_creation, { ephemeral_5m_input_tokens: sum('cache_creation_input_tokens'), ephemeral_1h_input_tokens: 0 })

  // Worked out by hand from the list prices of Sonnet 4.5 (USD per MTok: input / output / 5-minute cache write / cache
  // read). The first request's prompt (123,457 + 50,003 + 40,009 = 213,469 tokens) is over 200K: long-context rates.
  //   1st at 6 / 22.5 / 7.5 / 0.6: 123,457×6 + 20,011×22.5 + 40,009×7.5 + 50,003×0.6 = 1,521,058.8 µUSD
  //   2nd at 3 / 15 / 3.75 / 0.3:    7,001×3 +  3,333×15   +  1,234×3.75 + 99,999×0.3 =   105,625.2 µUSD
  //   3rd at 3 / 15 / 3.75 / 0.3:   77,777×3 +     55×15   + 10,000×3.75              =   271,656   µUSD
  // 1,898,340 µUSD = 189.834 cents; runtime (0.08 USD per active hour) adds under 0.14 cents in the minute this
  // takes at most, so 190 cents, rounded half up.
  t.ok(got.usage.active_seconds! < 60, 'active under a minute, as the sum assumes')
  t.same(got.usage.list_cost, { amount: '190', currency: 'USD' })
  const active = got.usage.active_seconds!

  t.ok(got.stats.active_seconds! > 0, 'active time was counted')
  t.equal(got.stats.active_seconds, active, 'stats and usage agree on active time')
  t.ok(got.stats.duration_seconds! >= got.stats.active_seconds!, 'active time is part of the duration')
  t.ok(got.stats.duration_seconds! < 60, 'duration is the session age')
})

t.test('a budget pauses the turn before the next model request: session.usage, then idle budget_reached', async (t) => {
  const { session, events } = await pausedAtBudget(t)
  const types = events.map((e) => e.type)
  t.same(types, [
    'user.message',
    'session.status_running',
    'span.model_request_start',
    'agent.tool_use',
    'span.model_request_end',
    'agent.tool_result',
    'session.usage',
    'session.status_idle',
  ])
  const usage = events.at(-2)
  t.same(usage.budget, limit(1))
  t.equal(usage.usage.input_tokens, 10_000)
  t.equal(usage.usage.list_cost.amount, '3')
  const stored = await history(session.id)
  t.same(
    stored.slice(-2).map((e) => e.type),
    ['session.usage', 'session.status_idle'],
    'history ends the same way',
  )
  const got = await s.client.beta.sessions.retrieve(session.id)
  t.equal(got.status, 'idle')
})

t.test('raising the budget resumes the paused turn', async (t) => {
  const { session, base } = await pausedAtBudget(t)
  s.model.enqueue({ steps: [{ type: 'text', text: 'resumed' }] })
  const events = await step(session.id, () => s.client.beta.sessions.update(session.id, { budget: limit(100_000) } as any))
  t.same(
    events.map((e) => e.type),
    ['session.updated', 'session.status_running', 'span.model_request_start', 'agent.message', 'span.model_request_end', 'session.status_idle'],
  )
  t.same(events[0].budget, limit(100_000))
  t.same(events.at(-1).stop_reason, { type: 'end_turn' })
  t.equal(s.model.requests.length, base + 2)
  const last = s.model.requests[base + 1]!.body.messages.at(-1)
  t.equal(last.content[0].type, 'tool_result', 'the same turn continues with the tool result')
})

t.test('removing the budget resumes the paused turn', async (t) => {
  const { session, base } = await pausedAtBudget(t)
  s.model.enqueue({ steps: [{ type: 'text', text: 'unbounded' }] })
  const events = await step(session.id, () => s.client.beta.sessions.update(session.id, { budget: null } as any))
  t.equal(events[0].type, 'session.updated')
  t.equal(events[0].budget, null)
  t.same(events.at(-1).stop_reason, { type: 'end_turn' })
  t.equal(s.model.requests.length, base + 2)
  const got = await s.client.beta.sessions.retrieve(session.id)
  t.equal(got.budget, null)
})

t.test('a new maximum not greater than the cost consumed is refused: budget_not_raised', async (t) => {
  const { session } = await pausedAtBudget(t)
  // 3 cents of tokens plus a little runtime: 3 is not greater than what was consumed.
  for (const cents of [2, 3]) {
    const err = await failure(s.client.beta.sessions.update(session.id, { budget: limit(cents) } as any))
    t.equal(err.status, 400, `${cents} cents`)
    t.equal(err.error.error.type, 'invalid_request_error')
    t.equal(err.error.error.details?.error_code, 'budget_not_raised')
    t.match(err.error.error.message, /budget\.max_list_cost\.amount/)
  }
  const got = await s.client.beta.sessions.retrieve(session.id)
  t.same(got.budget, limit(1), 'unchanged')
  t.same((await history(session.id)).at(-1).stop_reason, { type: 'budget_reached' }, 'still paused')
})

t.test('a budget cannot be added to a session created without one: budget_create_only', async (t) => {
  const session = await newSession()
  const err = await failure(s.client.beta.sessions.update(session.id, { budget: limit(500) } as any))
  t.equal(err.status, 400)
  t.equal(err.error.error.type, 'invalid_request_error')
  t.equal(err.error.error.details?.error_code, 'budget_create_only')
  t.match(err.error.error.message, /budget/)
  t.equal((await s.client.beta.sessions.retrieve(session.id)).budget, null)
})

t.test('a removed budget cannot be re-added: budget_create_only', async (t) => {
  const session = await newSession({}, { budget: limit(500) })
  const removed = await s.client.beta.sessions.update(session.id, { budget: null } as any)
  t.equal(removed.budget, null)
  const err = await failure(s.client.beta.sessions.update(session.id, { budget: limit(1000) } as any))
  t.equal(err.status, 400)
  t.equal(err.error.error.details?.error_code, 'budget_create_only')
  t.match(err.error.error.message, /budget/)
  t.equal((await s.client.beta.sessions.retrieve(session.id)).budget, null)
})

t.test('a budget on a model without a list price is refused at create: model_not_budgetable', async (t) => {
  const { agent: a, env: e } = await agentAndEnv(s.client, { model: 'claude-opus-4-7' })
  const err = await failure(s.client.beta.sessions.create({ agent: a.id, environment_id: e.id, budget: limit(100) } as any))
  t.equal(err.status, 400)
  t.equal(err.error.error.type, 'invalid_request_error')
  t.equal(err.error.error.details?.error_code, 'model_not_budgetable')
  t.match(err.error.error.message, /budget/)
  t.match(err.error.error.message, /claude-opus-4-7/)
  // Without a budget the same agent is fine.
  const ok = await s.client.beta.sessions.create({ agent: a.id, environment_id: e.id } as any)
  t.equal(ok.budget, null)
})

t.test('requires_action takes precedence over budget_reached', async (t) => {
  const session = await newSession({ tools: [LOOKUP] }, { budget: limit(1) })
  const base = s.model.requests.length
  s.model.enqueue({ steps: [{ type: 'tool_use', name: 'lookup', input: { key: 'k' } }], usage: THREE_CENTS })
  const events = await step(session.id, send(session.id, say('look up')))
  const use = events.find((e) => e.type === 'agent.custom_tool_use')
  t.same(events.at(-1).stop_reason, { type: 'requires_action', event_ids: [use.id] })
  t.notOk(
    events.some((e) => e.type === 'session.usage'),
    'no budget pause while a tool use waits',
  )

  // The budget is checked again before the next model request, once the result is in.
  const resumed = await step(
    session.id,
    send(session.id, { type: 'user.custom_tool_result', custom_tool_use_id: use.id, content: [{ type: 'text', text: 'v' }] }),
  )
  t.same(
    resumed.map((e) => e.type),
    ['user.custom_tool_result', 'session.status_running', 'session.usage', 'session.status_idle'],
  )
  t.same(resumed.at(-1).stop_reason, { type: 'budget_reached' })
  t.equal(s.model.requests.length, base + 1)
})
