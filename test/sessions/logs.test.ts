// What the server's stderr says about sessions, read as a person running it would: one JSON line per turn, model
// failures at warn naming the endpoint (never the key), session.error messages naming it too, and the official
// client's deprecation warning (printed with console.warn on every request by @anthropic-ai/sdk 1.11) once per
// model, as JSON. The agents use claude-sonnet-4-5, which that client lists as deprecated.
import { createServer } from 'node:net'
import t from 'tap'
import { agentAndEnv, collect, isIdle, sessionStack, until } from './_helpers.js'

const lines = (stderr: string) => stderr.split('\n').filter((l) => l.trim())
const parsed = (stderr: string) => lines(stderr).map((l) => JSON.parse(l))

async function turn(client: any, sessionId: string, text: string) {
  const stream = await client.beta.sessions.events.stream(sessionId)
  await client.beta.sessions.events.send(sessionId, { events: [{ type: 'user.message', content: [{ type: 'text', text }] }] })
  return collect(stream, isIdle)
}

// One server for the first two tests: the second starts after the first has read everything it counts.
const s = await sessionStack()

t.test('turns log one line each; the deprecation warning is one JSON line per model; stderr is all JSON', async (t) => {
  const { agent, env } = await agentAndEnv(s.client)
  const a = await s.client.beta.sessions.create({ agent: agent.id, environment_id: env.id } as any)
  const b = await s.client.beta.sessions.create({ agent: agent.id, environment_id: env.id } as any)
  s.model.enqueue({ steps: [{ type: 'text', text: 'one' }], usage: { input_tokens: 11, output_tokens: 3 } })
  await turn(s.client, a.id, 'first')
  await turn(s.client, a.id, 'second')
  await turn(s.client, b.id, 'third')
  t.equal(s.model.requests.length, 3)

  const ended = await until('three turn lines', async () => {
    const found = parsed(s.troupe.logs()).filter((l) => l.msg === 'turn ended')
    return found.length >= 3 && found
  })
  t.equal(ended.length, 3, 'one line per turn')
  t.match(ended[0], { level: 30, session: a.id, stop_reason: 'end_turn', input_tokens: 11, output_tokens: 3, model_requests: 1, tool_uses: 0 })
  t.same(
    ended.map((l) => l.session),
    [a.id, a.id, b.id],
  )
  t.ok(
    ended.every((l) => typeof l.duration_ms === 'number' && l.duration_ms >= 0),
    'each says how long it ran',
  )
  // Each turn names the request that stored its message, as the gateway's request line does.
  const posts = parsed(s.troupe.logs()).filter((l) => l.msg === 'request' && l.method === 'POST' && l.route === '/v1/sessions/{session_id}/events')
  t.ok(
    ended.every((l) => /^req_/.test(l.rid) && posts.some((p) => p.rid === l.rid)),
    'each turn line carries the rid of its POST',
  )

  const stderr = s.troupe.logs()
  t.doesNotThrow(() => parsed(stderr), 'every stderr line is JSON')
  const deprecations = parsed(stderr).filter((l) => /deprecated/.test(l.msg ?? ''))
  t.equal(deprecations.length, 1, 'three requests, one deprecation line')
  t.match(deprecations[0], { level: 40, component: 'model-client', msg: /claude-sonnet-4-5/ })
})

t.test('a model failure: warn line and session.error name the endpoint, never the key', async (t) => {
  const { agent, env } = await agentAndEnv(s.client)
  const session = await s.client.beta.sessions.create({ agent: agent.id, environment_id: env.id } as any)
  s.model.enqueue({ error: { status: 529, type: 'overloaded_error', message: 'Overloaded' } })
  const events = await turn(s.client, session.id, 'hello')
  const err = events.find((e) => e.type === 'session.error')
  const endpoint = `POST ${s.model.url}/v1/messages`
  t.equal(err.error.message, `${endpoint} answered 529 overloaded_error: Overloaded`)
  t.equal(err.error.retry_status.type, 'retrying')

  const warned = await until('the warn line', async () => parsed(s.troupe.logs()).find((l) => l.msg === err.error.message))
  t.match(warned, { level: 40, session: session.id, endpoint, error_type: 'model_overloaded_error', retrying: true, attempt: 1 })
  t.notOk(s.troupe.logs().includes('fake-key'), 'the API key appears in no log line')
})

t.test('an endpoint that cannot be reached is named in the session.error', async (t) => {
  // A port that was free a moment ago: nothing listens there.
  const port = await new Promise<number>((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const p = (srv.address() as { port: number }).port
      srv.close(() => resolve(p))
    })
  })
  const base = `http://127.0.0.1:${port}/proxy/`
  const s = await sessionStack({ TROUPE_MODEL_BASE_URL: base, TROUPE_MODEL_RETRIES: '0' })
  const { agent, env } = await agentAndEnv(s.client)
  const session = await s.client.beta.sessions.create({ agent: agent.id, environment_id: env.id } as any)
  const events = await turn(s.client, session.id, 'hello')
  const err = events.find((e) => e.type === 'session.error')
  t.match(err.error.message, new RegExp(`^POST http://127\\.0\\.0\\.1:${port}/proxy/v1/messages could not be reached: `))
  t.equal(err.error.type, 'model_request_failed_error')
})
