import t from 'tap'
import { agentAndEnv, collect, isIdle, sessionStack } from './_helpers.js'

const s = await sessionStack()

t.test('a message runs a turn end to end', async (t) => {
  const { agent, env } = await agentAndEnv(s.client)
  const session = await s.client.beta.sessions.create({ agent: agent.id, environment_id: env.id } as any)
  t.equal(session.status, 'idle')
  const stream = await s.client.beta.sessions.events.stream(session.id)
  s.model.enqueue({ steps: [{ type: 'text', text: 'hello there' }] })
  const sent = await s.client.beta.sessions.events.send(session.id, { events: [{ type: 'user.message', content: [{ type: 'text', text: 'hi' }] }] } as any)
  t.equal(sent.data!.length, 1)
  const events = await collect(stream, isIdle)
  t.same(
    events.map((e) => e.type),
    ['user.message', 'session.status_running', 'span.model_request_start', 'agent.message', 'span.model_request_end', 'session.status_idle'],
  )
  const msg = events.find((e) => e.type === 'agent.message')
  t.same(msg.content, [{ type: 'text', text: 'hello there' }])
  const list = await s.client.beta.sessions.events.list(session.id)
  t.same(
    list.data.map((e: any) => e.type),
    events.map((e) => e.type),
  )
  t.ok(list.data[0]!.processed_at, 'user.message processed')
  const got = await s.client.beta.sessions.retrieve(session.id)
  t.equal(got.status, 'idle')
  t.ok(got.usage.input_tokens! > 0)
})
