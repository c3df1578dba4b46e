import t from 'tap'
import { agentAndEnv, collect, isIdle, sessionStack, until } from './_helpers.js'

// The session's mailbox and model loop (SPEC sessions, WIRE.md §7.2–§7.5), driven through the official client
// against the fake Messages API: what Troupe sends to the model, the events a turn emits, and how model
// errors, retries and interrupts end a turn.

const s = await sessionStack()
const { env } = await agentAndEnv(s.client)

const text = (t: string) => ({ type: 'user.message', content: [{ type: 'text', text: t }] })
const send = (id: string, ...events: any[]) => s.client.beta.sessions.events.send(id, { events } as any)
const types = (events: any[]) => events.map((e) => e.type)

async function newSession(agent: Record<string, unknown> = {}) {
  const a = await s.client.beta.agents.create({ name: 'looper', model: 'claude-sonnet-4-5', ...agent } as any)
  const session = await s.client.beta.sessions.create({ agent: a.id, environment_id: env.id } as any)
  return { agent: a, session }
}

/** Opens a stream, sends one message, and returns the events through the `idles`-th idle. */
async function run(id: string, msg: string, idles = 1) {
  const stream = await s.client.beta.sessions.events.stream(id)
  const sent = await send(id, text(msg))
  const events = await collect(stream, (_e, all) => all.filter(isIdle).length === idles, 15_000)
  return { sent: sent.data![0]!, events }
}

const TURN = ['user.message', 'session.status_running', 'span.model_request_start', 'agent.message', 'span.model_request_end', 'session.status_idle']

// ------------------------------------------------------------------------------------------ the request

t.test('the model request carries the agent snapshot: system, model, speed, inference_geo, tools, max_tokens', async (t) => {
  const { agent, session } = await newSession({
    system: 'You are a careful tester.',
    model: { id: 'claude-opus-4-6', speed: 'fast', inference_geo: 'us' },
    tools: [
      {
        type: 'agent_toolset_20260401',
        default_config: { enabled: false },
        configs: [
          { name: 'bash', enabled: true },
          { name: 'read', enabled: true },
        ],
      },
      {
        type: 'custom',
        name: 'lookup',
        description: 'Looks a thing up',
        input_schema: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
      },
    ],
  })
  // The session keeps the agent as it was at creation: a later agent version changes nothing here.
  await s.client.beta.agents.update(agent.id, { version: agent.version, system: 'Changed later.', tools: [] } as any)
  const before = s.model.requests.length
  await run(session.id, 'hello')
  t.equal(s.model.requests.length, before + 1)
  const req = s.model.requests[before]!
  t.equal(req.path, '/v1/messages')
  const body = req.body
  t.equal(body.model, 'claude-opus-4-6')
  t.equal(body.system, 'You are a careful tester.')
  t.equal(body.speed, 'fast')
  t.equal(body.inference_geo, 'us')
  t.equal(body.max_tokens, 8192, 'the default max_tokens')
  t.equal(body.stream, true)
  t.same(body.messages, [{ role: 'user', content: [{ type: 'text', text: 'hello' }] }])
  t.same(
    body.tools.map((x: any) => x.name),
    ['bash', 'read', 'lookup'],
    'enabled built-ins, then custom tools',
  )
  const bash = body.tools.find((x: any) => x.name === 'bash')
  t.type(bash.description, 'string')
  t.equal(bash.input_schema?.type, 'object', 'built-ins carry their full definition')
  t.same(
    body.tools.find((x: any) => x.name === 'lookup'),
    {
      name: 'lookup',
      description: 'Looks a thing up',
      input_schema: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
    },
  )
})

t.test('speed, inference_geo and system are left out when the agent has none', async (t) => {
  const { session } = await newSession()
  const before = s.model.requests.length
  await run(session.id, 'plain')
  const body = s.model.requests[before]!.body
  t.equal(body.model, 'claude-sonnet-4-5')
  t.notOk('speed' in body)
  t.notOk('inference_geo' in body)
  t.notOk('system' in body)
})

t.test('all built-in tools are offered when the toolset is enabled by default', async (t) => {
  const { session } = await newSession({ tools: [{ type: 'agent_toolset_20260401' }] })
  const before = s.model.requests.length
  await run(session.id, 'tools?')
  const names = s.model.requests[before]!.body.tools.map((x: any) => x.name).sort()
  // The web tools are the provider's server tools (test/sessions/web-tools.test.ts).
  t.same(names, ['bash', 'edit', 'glob', 'grep', 'read', 'web_fetch', 'web_search', 'write'])
})

// ------------------------------------------------------------------------------------------- the events

t.test('a turn emits running, the span with thinking and message, usage as scripted, then idle end_turn', async (t) => {
  const { session } = await newSession()
  s.model.enqueue({
    steps: [
      { type: 'thinking', thinking: 'hmm, let me see' },
      { type: 'text', text: 'The answer is 4.' },
    ],
    usage: { input_tokens: 123, output_tokens: 45, cache_read_input_tokens: 7, cache_creation_input_tokens: 11 },
  })
  const { events } = await run(session.id, 'what is 2+2?')
  t.same(types(events), [
    'user.message',
    'session.status_running',
    'span.model_request_start',
    'agent.thinking',
    'agent.message',
    'span.model_request_end',
    'session.status_idle',
  ])
  const [, , start, , message, end, idle] = events
  t.same(message.content, [{ type: 'text', text: 'The answer is 4.' }])
  t.equal(end.model_request_start_id, start.id)
  t.equal(end.is_error, false)
  t.match(end.model_usage, { input_tokens: 123, output_tokens: 45, cache_read_input_tokens: 7, cache_creation_input_tokens: 11 })
  t.same(idle.stop_reason, { type: 'end_turn' })
  for (const e of events) t.match(e.id, /^sevt_/, `${e.type} has an id`)
  const got = await s.client.beta.sessions.retrieve(session.id)
  t.equal(got.status, 'idle')
  t.equal(got.usage.input_tokens, 123)
  t.equal(got.usage.output_tokens, 45)
})

t.test('the conversation goes back to the model: the next request holds the earlier turn', async (t) => {
  const { session } = await newSession()
  s.model.enqueue({
    steps: [
      { type: 'thinking', thinking: 'private' },
      { type: 'text', text: 'first answer' },
    ],
  })
  await run(session.id, 'first question')
  const before = s.model.requests.length
  await run(session.id, 'second question')
  t.same(s.model.requests[before]!.body.messages, [
    { role: 'user', content: [{ type: 'text', text: 'first question' }] },
    { role: 'assistant', content: [{ type: 'text', text: 'first answer' }] },
    { role: 'user', content: [{ type: 'text', text: 'second question' }] },
  ])
})

t.test('a refusal ends the turn idle with stop_reason refusal', async (t) => {
  const { session } = await newSession()
  s.model.enqueue({ steps: [{ type: 'text', text: 'I can not help with that.' }], stop_reason: 'refusal' })
  const { events } = await run(session.id, 'something bad')
  t.same(types(events), TURN)
  const idle = events.at(-1)
  t.same(idle.stop_reason, { type: 'refusal' })
  t.match(idle.stop_details, { type: 'refusal' })
  // The next turn is an ordinary one again.
  const next = await run(session.id, 'something fine')
  t.same(next.events.at(-1).stop_reason, { type: 'end_turn' })
})

// ------------------------------------------------------------------------------------------------ errors

t.test('529 overloaded once: session.error retrying, rescheduled, then a successful turn', async (t) => {
  const { session } = await newSession()
  const before = s.model.requests.length
  s.model.enqueue({ error: { status: 529, type: 'overloaded_error' } }, { steps: [{ type: 'text', text: 'made it' }] })
  const { events } = await run(session.id, 'try hard')
  t.same(types(events), [
    'user.message',
    'session.status_running',
    'span.model_request_start',
    'span.model_request_end',
    'session.error',
    'session.status_rescheduled',
    'session.status_running',
    'span.model_request_start',
    'agent.message',
    'span.model_request_end',
    'session.status_idle',
  ])
  const failedEnd = events[3]
  t.equal(failedEnd.is_error, true)
  t.equal(failedEnd.model_request_start_id, events[2].id)
  const err = events[4].error
  t.equal(err.type, 'model_overloaded_error')
  t.same(err.retry_status, { type: 'retrying' })
  t.type(err.message, 'string')
  t.same(events[8].content, [{ type: 'text', text: 'made it' }])
  t.same(events.at(-1).stop_reason, { type: 'end_turn' })
  t.equal(s.model.requests.length, before + 2)
  t.same(s.model.requests[before + 1]!.body.messages, s.model.requests[before]!.body.messages, 'the retry sends the same conversation')
})

t.test('429 rate limited: session.error model_rate_limited_error, then a retry', async (t) => {
  const { session } = await newSession()
  s.model.enqueue({ error: { status: 429, type: 'rate_limit_error' } }, { steps: [{ type: 'text', text: 'ok now' }] })
  const { events } = await run(session.id, 'quick')
  const errors = events.filter((e) => e.type === 'session.error')
  t.equal(errors.length, 1)
  t.equal(errors[0].error.type, 'model_rate_limited_error')
  t.same(errors[0].error.retry_status, { type: 'retrying' })
  t.ok(events.some((e) => e.type === 'session.status_rescheduled'))
  t.same(events.at(-1).stop_reason, { type: 'end_turn' })
})

t.test('persistent 529: retries run out, session.error exhausted, idle retries_exhausted', async (t) => {
  const { session } = await newSession()
  const before = s.model.requests.length
  const overloaded = { error: { status: 529, type: 'overloaded_error' } }
  // The test stack runs with the default 4 retries: 5 attempts in all.
  s.model.enqueue(overloaded, overloaded, overloaded, overloaded, overloaded)
  const { events } = await run(session.id, 'never works')
  t.equal(s.model.requests.length, before + 5, 'one request and four retries')
  t.equal(s.model.queued, 0)
  const errors = events.filter((e) => e.type === 'session.error')
  t.same(
    errors.map((e) => e.error.retry_status.type),
    ['retrying', 'retrying', 'retrying', 'retrying', 'exhausted'],
  )
  t.ok(errors.every((e) => e.error.type === 'model_overloaded_error'))
  t.equal(events.filter((e) => e.type === 'session.status_rescheduled').length, 4)
  t.equal(events.filter((e) => e.type === 'span.model_request_end' && e.is_error === true).length, 5)
  t.notOk(events.some((e) => e.type === 'agent.message'))
  t.same(types(events).slice(-2), ['session.error', 'session.status_idle'])
  t.same(events.at(-1).stop_reason, { type: 'retries_exhausted' })
  t.equal((await s.client.beta.sessions.retrieve(session.id)).status, 'idle')
  // The count starts afresh: the next message gets its own retries and works.
  s.model.enqueue(overloaded)
  const next = await run(session.id, 'again')
  t.equal(next.events.filter((e) => e.type === 'session.error').length, 1)
  t.same(next.events.at(-1).stop_reason, { type: 'end_turn' })
})

t.test('a 400 from the model is not retried: exhausted at once', async (t) => {
  const { session } = await newSession()
  const before = s.model.requests.length
  s.model.enqueue({ error: { status: 400, type: 'invalid_request_error', message: 'messages: bad shape' } })
  const { events } = await run(session.id, 'malformed')
  t.equal(s.model.requests.length, before + 1, 'one request only')
  t.same(types(events), [
    'user.message',
    'session.status_running',
    'span.model_request_start',
    'span.model_request_end',
    'session.error',
    'session.status_idle',
  ])
  const err = events[4].error
  t.equal(err.type, 'model_request_failed_error')
  t.same(err.retry_status, { type: 'exhausted' })
  t.match(err.message, 'messages: bad shape', 'the provider message is passed on')
  t.same(events.at(-1).stop_reason, { type: 'retries_exhausted' })
})

// ----------------------------------------------------------------------------------------------- mailbox

t.test('a message sent during a turn waits for it, then runs its own turn', async (t) => {
  const { session } = await newSession()
  const before = s.model.requests.length
  // The first reply trickles out slowly (about 1.5 s in all), so the turn is surely running when the second
  // message arrives; the order checks below do not depend on that margin.
  s.model.enqueue({ steps: [{ type: 'text', text: 'slow answer', chunks: 3 }], chunkDelayMs: 150 }, { steps: [{ type: 'text', text: 'fast answer' }] })
  const stream = await s.client.beta.sessions.events.stream(session.id)
  const first = (await send(session.id, text('first'))).data![0]!
  await s.model.waitForRequests(before + 1)
  const second = (await send(session.id, text('second'))).data![0]!
  t.equal(second.processed_at, null)
  const listed = (await s.client.beta.sessions.events.list(session.id)).data.find((e) => e.id === second.id)
  t.equal(listed?.processed_at, null, 'still waiting while the first turn runs')
  const events = await collect(stream, (_e, all) => all.filter(isIdle).length === 2, 15_000)

  t.same(types(events), [
    'user.message',
    'session.status_running',
    'span.model_request_start',
    'user.message',
    'agent.message',
    'span.model_request_end',
    'session.status_idle',
    'session.status_running',
    'span.model_request_start',
    'agent.message',
    'span.model_request_end',
    'session.status_idle',
  ])
  t.equal(events[3].id, second.id)
  t.same(events[4].content, [{ type: 'text', text: 'slow answer' }])
  t.same(events[9].content, [{ type: 'text', text: 'fast answer' }])
  t.equal(s.model.requests.length, before + 2, 'two model requests')
  t.same(s.model.requests[before]!.body.messages, [{ role: 'user', content: [{ type: 'text', text: 'first' }] }])
  t.same(
    s.model.requests[before + 1]!.body.messages,
    [
      { role: 'user', content: [{ type: 'text', text: 'first' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'slow answer' }] },
      { role: 'user', content: [{ type: 'text', text: 'second' }] },
    ],
    'the second request holds both messages, in order',
  )

  const history = (await s.client.beta.sessions.events.list(session.id)).data as any[]
  const at = (id: string) => history.find((e) => e.id === id)!.processed_at as string
  const firstIdle = events[6]
  t.ok(at(first.id) <= at(events[1].id), 'the first message was processed when its turn began')
  t.ok(at(second.id) >= firstIdle.processed_at, 'the second message was processed only after the first turn ended')
})

t.test('an interrupt aborts a hanging model request; the session goes idle and works again', async (t) => {
  const { session } = await newSession()
  const before = s.model.requests.length
  const aborted = s.model.aborted
  s.model.enqueue({ hang: true })
  const stream = await s.client.beta.sessions.events.stream(session.id)
  await send(session.id, text('wait forever'))
  await s.model.waitForRequests(before + 1)
  const interrupt = (await send(session.id, { type: 'user.interrupt' })).data![0]!
  t.equal(interrupt.type, 'user.interrupt')
  await s.model.waitForAborted(aborted + 1)
  const events = await collect(stream, isIdle)
  t.same(types(events), [
    'user.message',
    'session.status_running',
    'span.model_request_start',
    'user.interrupt',
    'span.model_request_end',
    'session.status_idle',
  ])
  t.equal(events[4].is_error, true, 'the span ends as an error')
  t.same(events.at(-1).stop_reason, { type: 'end_turn' })
  t.notOk(
    events.some((e) => e.type === 'session.error'),
    'an interrupt is not an error',
  )
  const history = (await s.client.beta.sessions.events.list(session.id)).data as any[]
  t.ok(history.find((e) => e.id === interrupt.id)?.processed_at, 'the interrupt is processed')
  t.equal((await s.client.beta.sessions.retrieve(session.id)).status, 'idle')
  t.equal(s.model.requests.length, before + 1, 'no retry after an interrupt')

  const next = await run(session.id, 'are you there?')
  t.same(types(next.events), TURN)
  t.same(next.events.at(-1).stop_reason, { type: 'end_turn' })
  t.same(s.model.requests[before + 1]!.body.messages.at(-1).content.at(-1), { type: 'text', text: 'are you there?' })
})

t.test('an interrupt mid-message leaves no final agent.message and keeps the partial text out of the conversation', async (t) => {
  const { session } = await newSession()
  const before = s.model.requests.length
  const aborted = s.model.aborted
  // message_start, ping, content_block_start, one text delta; then the reply stalls.
  s.model.enqueue({ steps: [{ type: 'text', text: 'partial words here', chunks: 3 }], stallAfterEvents: 4 })
  const stream = await s.client.beta.sessions.events.stream(session.id, { event_deltas: ['agent.message'] })
  await send(session.id, text('talk'))
  const seen: any[] = []
  for await (const e of stream) {
    seen.push(e)
    if (e.type === 'event_delta') break
  }
  const preview = seen.find((e) => e.type === 'event_start')
  t.ok(preview, 'the preview started')
  // Carry on from the span start: the replay brings whatever was stored since, then the live tail.
  const spanStart = seen.find((e) => e.type === 'span.model_request_start')
  const rest = await s.client.beta.sessions.events.stream(session.id, { after: spanStart.id } as any)
  await send(session.id, { type: 'user.interrupt' })
  await s.model.waitForAborted(aborted + 1)
  const events = await collect(rest, isIdle)
  t.notOk(
    events.some((e) => e.type === 'agent.message'),
    'no final event for the preview',
  )
  const end = events.find((e) => e.type === 'span.model_request_end')
  t.equal(end?.is_error, true, 'the span end closes the preview as an error')
  t.same(events.at(-1).stop_reason, { type: 'end_turn' })
  const history = (await s.client.beta.sessions.events.list(session.id)).data as any[]
  t.notOk(
    history.some((e) => e.id === preview.event.id),
    'the previewed id never enters the history',
  )

  await run(session.id, 'again')
  t.same(
    s.model.requests[before + 1]!.body.messages,
    [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'talk' },
          { type: 'text', text: 'again' },
        ],
      },
    ],
    'the partial answer is not part of the conversation',
  )
})

t.test('an interrupt sent together with a message never leaves a turn running', async (t) => {
  // Message and interrupt go out at once, so the session meets them in either order and at any point of
  // taking the message in. Whatever the interleaving, the interrupt is handled and, when it came second,
  // no model request is left running. (An interrupt stored while the message was being taken in used to
  // find no turn to abort, and the turn then ran on past it.)
  s.model.setFallback({ hang: true })
  t.teardown(() => s.model.setFallback({ steps: [{ type: 'text', text: 'ok' }] }))
  const { session: first } = await newSession()
  const requests = s.model.requests.length
  const aborted = s.model.aborted
  const allStopped = () => s.model.waitForAborted(aborted + (s.model.requests.length - requests))
  let second = 0
  let taken = 0
  for (let i = 0; i < 15; i++) {
    const session = i === 0 ? first : await s.client.beta.sessions.create({ agent: first.agent.id, environment_id: env.id } as any)
    // Staggered by 0–4 ms across runs to meet the message at different points (coverage only, not correctness).
    const [m, x] = await Promise.all([
      send(session.id, text(`go ${i}`)),
      new Promise((r) => setTimeout(r, i % 5)).then(() => send(session.id, { type: 'user.interrupt' })),
    ])
    const list = () => s.client.beta.sessions.events.list(session.id).then((p) => p.data as any[])
    const history = await until(
      'the interrupt to be processed',
      async () => {
        const h = await list()
        return h.find((e) => e.id === x.data![0]!.id)?.processed_at ? h : undefined
      },
      5000,
      20,
    )
    const order = history.findIndex((e) => e.id === m.data![0]!.id) < history.findIndex((e) => e.id === x.data![0]!.id)
    if (order) {
      second++
      if (!history.some((e) => e.type === 'session.status_running')) taken++
    } else {
      // Interrupt first: the message then started an ordinary (hanging) turn; stop that one too.
      await send(session.id, { type: 'user.interrupt' })
    }
    await until('the session to be idle', async () => (await s.client.beta.sessions.retrieve(session.id)).status === 'idle', 5000, 20)
    await allStopped()
  }
  t.comment(`the interrupt came second in ${second} of 15 runs, ${taken} times before the turn began`)
  t.equal(s.model.aborted - aborted, s.model.requests.length - requests, 'every model request was stopped')
})
