import t from 'tap'
import { agentAndEnv, collect, isIdle, sessionStack } from './_helpers.js'

/**
 * A turn's two limits on tool use (the client's `tool_use_limit_reached_error`: "`message` states the limit that
 * applied"): tool-use rounds, and model responses in a row that each request a single tool call and are cut off at
 * the output limit or the context window. Here at 2 and 2 (TROUPE_TURN_TOOL_ROUNDS, TROUPE_TURN_CUT_OFF_CALLS).
 */

const s = await sessionStack({ TROUPE_TURN_TOOL_ROUNDS: '2', TROUPE_TURN_CUT_OFF_CALLS: '2' })
const TOOLSET = [{ type: 'agent_toolset_20260401' }]
const say = (text: string) => ({ type: 'user.message', content: [{ type: 'text', text }] })
const of = (events: any[], type: string) => events.filter((e) => e.type === type)
const bash = (command: string) => ({ type: 'tool_use' as const, name: 'bash', input: { command } })
const write = { type: 'tool_use' as const, name: 'write', input: { file_path: '/workspace/big.txt', content: 'x'.repeat(40) } }

async function newSession() {
  const { agent, env } = await agentAndEnv(s.client, { tools: TOOLSET })
  return s.client.beta.sessions.create({ agent: agent.id, environment_id: env.id } as any)
}

async function step(id: string, text: string) {
  const stream = await s.client.beta.sessions.events.stream(id)
  await s.client.beta.sessions.events.send(id, { events: [say(text)] } as any)
  return collect(stream, isIdle, 30_000)
}

/** The tool results a model request carried in its last message. */
const resultsIn = (req: { body: any }) => (req.body.messages.at(-1).content as any[]).filter((b) => b.type === 'tool_result')

t.test('tool-use rounds: the call past the limit does not run, and the message names the rounds limit', async (t) => {
  const session = await newSession()
  const base = s.model.requests.length
  s.model.enqueue({ steps: [bash('echo one')] }, { steps: [bash('echo two')] }, { steps: [bash('echo three > /workspace/three')] })
  const events = await step(session.id, 'go')
  const results = of(events, 'agent.tool_result')
  t.equal(results.length, 3)
  t.same(
    results.slice(0, 2).map((r) => r.is_error),
    [false, false],
    'two rounds ran',
  )
  t.match(results[2], { is_error: true, content: [{ text: 'Not run: the turn reached its limit of 2 tool-use rounds.' }] })
  const errors = of(events, 'session.error')
  t.equal(errors.length, 1)
  t.match(errors[0].error, { type: 'tool_use_limit_reached_error', message: /limit of 2 tool-use rounds/, retry_status: { type: 'exhausted' } })
  t.notMatch(errors[0].error.message, /cut off/)
  t.same(events.at(-1).stop_reason, { type: 'retries_exhausted' })
  t.equal(s.model.requests.length - base, 3, 'no model request after the limit')

  // The next message starts a new turn, counting from zero: two rounds again, then the answer.
  s.model.enqueue({ steps: [bash('echo again')] }, { steps: [bash('echo and again')] }, { steps: [{ type: 'text', text: 'done' }] })
  const next = await step(session.id, 'once more')
  t.same(
    of(next, 'agent.tool_result').map((r) => r.is_error),
    [false, false],
  )
  t.same(of(next, 'session.error'), [])
  t.same(next.at(-1).stop_reason, { type: 'end_turn' })
  const first = s.model.requests[base + 3]!.body.messages as any[]
  t.match(first.at(-2), { role: 'assistant', content: [{ type: 'tool_use', name: 'bash' }] }, 'the unrun call stays in the conversation')
  t.match(
    first.at(-1),
    {
      role: 'user',
      content: [
        { type: 'tool_result', is_error: true },
        { type: 'text', text: 'once more' },
      ],
    },
    'with its result',
  )
})

t.test('cut-off calls: never run; two in a row stop the turn, the message naming the output limit', async (t) => {
  const session = await newSession()
  const base = s.model.requests.length
  s.model.enqueue({ steps: [{ type: 'text', text: 'Writing it.' }, write], stop_reason: 'max_tokens' }, { steps: [write], stop_reason: 'max_tokens' })
  const events = await step(session.id, 'write a big file')
  const results = of(events, 'agent.tool_result')
  t.equal(results.length, 2)
  for (const r of results) {
    t.match(r, { is_error: true, content: [{ text: /^Not run: this call was cut off at the model's output limit \(max_tokens\)/ }] })
  }
  t.same(
    resultsIn(s.model.requests[base + 1]!).map((b) => b.is_error),
    [true],
    'the model is told its call was cut off',
  )
  const [error] = of(events, 'session.error')
  t.match(error.error, {
    type: 'tool_use_limit_reached_error',
    message: /limit of 2 model responses in a row that each requested a single tool call and were cut off at the model's output limit \(max_tokens\)/,
    retry_status: { type: 'exhausted' },
  })
  t.same(events.at(-1).stop_reason, { type: 'retries_exhausted' })
  t.equal(s.model.requests.length - base, 2)
})

t.test('cut-off calls not in a row do not stop the turn; the context window is named when it applies', async (t) => {
  const session = await newSession()
  s.model.enqueue(
    { steps: [write], stop_reason: 'max_tokens' },
    { steps: [bash('echo fine')] },
    { steps: [write], stop_reason: 'max_tokens' },
    { steps: [{ type: 'text', text: 'gave up' }] },
  )
  const events = await step(session.id, 'try')
  t.same(
    of(events, 'agent.tool_result').map((r) => r.is_error),
    [true, false, true],
  )
  t.same(of(events, 'session.error'), [])
  t.same(events.at(-1).stop_reason, { type: 'end_turn' })

  // The second cut off inside the call's block, which the stream never closes: still the call asked for, still unrun.
  s.model.enqueue(
    { steps: [write], stop_reason: 'model_context_window_exceeded' },
    { steps: [write], stop_reason: 'model_context_window_exceeded', openLastBlock: true },
  )
  const full = await step(session.id, 'again')
  t.match(of(full, 'agent.tool_result')[0].content[0].text, /cut off at the model's context window/)
  t.same(
    of(full, 'agent.tool_use').map((u) => u.name),
    ['write', 'write'],
  )
  t.equal(of(full, 'agent.tool_result').length, 2)
  t.match(of(full, 'session.error')[0].error.message, /cut off at the model's context window/)
})
