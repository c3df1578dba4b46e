import t from 'tap'
import { connect, type Msg } from '@nats-io/transport-node'
import { REQUEST_ID_HEADER } from '../../protocol/wire.js'
import { stack } from '../helpers/stack.js'
import { raw, startTroupe } from '../helpers/troupe.js'

const s = await stack()

/** The server's `request` log lines so far, parsed. */
const requestLines = () =>
  s.troupe
    .logs()
    .split('\n')
    .filter((l) => l.includes('"msg":"request"'))
    .map((l) => JSON.parse(l))

/** Waits until the server logged the request with this id (a line is written once the response is complete). */
async function lineFor(rid: string, timeoutMs = 10_000): Promise<any> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const line = requestLines().find((l) => l.rid === rid)
    if (line) return line
    if (Date.now() > deadline) throw new Error(`no request line for ${rid}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

t.test('a known path with the wrong method is a 405 listing the methods it has (HEAD wherever GET)', async (t) => {
  for (const [method, path, allow] of [
    ['PUT', '/v1/agents', 'POST, GET, HEAD'],
    ['DELETE', '/v1/agents/agent_123', 'GET, HEAD, POST'],
    ['PATCH', '/v1/sessions/sesn_123/events', 'POST, GET, HEAD'],
    ['POST', '/healthz', 'GET, HEAD'],
    ['DELETE', '/v1/agents/not-an-agent-id', 'GET, HEAD, POST'],
  ] as const) {
    const r = await raw(s.url, method, path)
    t.equal(r.status, 405, `${method} ${path}`)
    t.same(r.headers.get('allow')?.split(', ').sort(), allow.split(', ').sort(), `${method} ${path}: Allow`)
    t.equal(r.json.type, 'error')
    t.equal(r.json.error.type, 'invalid_request_error')
    t.match(r.json.error.message, `${method} is not allowed on ${path}`)
    t.equal(r.json.request_id, r.headers.get('request-id'))
  }
  const unknown = await raw(s.url, 'GET', '/v1/nope')
  t.equal(unknown.status, 404, 'an unknown path is still a 404')
})

t.test('a malformed escape in a path id is a 404, not a 500', async (t) => {
  for (const path of ['/v1/agents/%E0%A4%A', '/v1/sessions/sesn_%ZZ/events']) {
    const r = await raw(s.url, 'GET', path)
    t.equal(r.status, 404, path)
    t.equal(r.json.error.type, 'not_found_error')
  }
})

t.test('a JSON body that is not an object is a 400', async (t) => {
  for (const body of ['[]', '"x"', '1', 'null', '[{"name":"x"}]']) {
    const r = await raw(s.url, 'POST', '/v1/environments', body)
    t.equal(r.status, 400, body)
    t.equal(r.json.error.type, 'invalid_request_error')
    t.match(r.json.error.message, /^body must be a JSON object/, body)
  }
  const empty = await raw(s.url, 'POST', '/v1/environments', '')
  t.equal(empty.status, 400, 'an empty body is still validated as {}')
  t.match(empty.json.error.message, /name/)
})

t.test('one log line per request: id, method, route pattern, status, duration, bytes', async (t) => {
  const env = await raw(s.url, 'POST', '/v1/environments', { name: 'logged' })
  t.equal(env.status, 200)
  const created = await lineFor(env.headers.get('request-id')!)
  t.match(created, { level: 30, method: 'POST', route: '/v1/environments', status: 200, bytes_in: JSON.stringify({ name: 'logged' }).length })
  t.type(created.ms, 'number')
  t.ok(created.bytes_out > 0)

  const got = await raw(s.url, 'GET', `/v1/environments/${env.json.id}`)
  t.match(await lineFor(got.headers.get('request-id')!), { method: 'GET', route: '/v1/environments/{environment_id}', status: 200 })
  const missing = await raw(s.url, 'GET', '/v1/environments/env_nothere')
  t.match(await lineFor(missing.headers.get('request-id')!), { route: '/v1/environments/{environment_id}', status: 404 })
  const nowhere = await raw(s.url, 'GET', '/v1/nowhere/at/all')
  t.match(await lineFor(nowhere.headers.get('request-id')!), { route: 'unmatched', status: 404 })
  const wrong = await raw(s.url, 'PUT', '/v1/environments')
  t.match(await lineFor(wrong.headers.get('request-id')!), { route: 'unmatched', status: 405 })
  const health = await raw(s.url, 'GET', '/healthz')
  t.match(await lineFor(health.headers.get('request-id')!), { route: '/healthz', status: 200 })
  t.equal(requestLines().filter((l) => l.rid === env.headers.get('request-id')).length, 1, 'once per request')
})

t.test('an SSE stream logs once, when it ends', async (t) => {
  const agent = await raw(s.url, 'POST', '/v1/agents', { name: 'a', model: 'claude-sonnet-4-5' })
  const env = await raw(s.url, 'POST', '/v1/environments', { name: 'e' })
  const session = await raw(s.url, 'POST', '/v1/sessions', { agent: agent.json.id, environment_id: env.json.id })
  t.equal(session.status, 200, session.text)
  const ac = new AbortController()
  const res = await fetch(`${s.url}/v1/sessions/${session.json.id}/events/stream`, { signal: ac.signal })
  t.equal(res.status, 200)
  const rid = res.headers.get('request-id')!
  const reader = res.body!.getReader()
  await reader.read() // the opening comment: the stream is live
  t.notOk(
    requestLines().some((l) => l.rid === rid),
    'nothing logged while it is open',
  )
  ac.abort()
  await reader.closed.catch(() => undefined)
  const line = await lineFor(rid)
  t.match(line, { method: 'GET', route: '/v1/sessions/{session_id}/events/stream', status: 200 })
  t.ok(line.bytes_out > 0)
})

t.test('a call this host serves never reaches NATS; one that crosses carries the request id in a NATS header', async (t) => {
  const nc = await connect({ servers: s.nats.url })
  t.teardown(() => nc.close())
  const seen: Msg[] = []
  nc.subscribe('troupe.environment.>', { callback: (_err, m) => void seen.push(m) })
  await nc.flush()
  const local = await raw(s.url, 'POST', '/v1/environments', { name: 'local' })
  t.equal(local.status, 200)
  // What went over NATS would have reached this subscription before a request sent after it.
  await nc.request('troupe.host.ping', undefined, { timeout: 5000 })
  await nc.flush()
  t.same(
    seen.map((m) => m.subject),
    [],
    'served in-process (TROUPE_LOCAL_CALLS defaults to on)',
  )

  // A server that sends every call over NATS, as calls between hosts go.
  const remote = await startTroupe({ natsUrl: s.nats.url, env: { TROUPE_LOCAL_CALLS: '0' } })
  t.teardown(() => remote.stop())
  const r = await raw(remote.url, 'POST', '/v1/environments', { name: 'traced' })
  t.equal(r.status, 200)
  const rid = r.headers.get('request-id')
  // The copy on this connection may trail the reply the gateway got on its own.
  const deadline = Date.now() + 5000
  const carried = () => seen.some((m) => m.subject === 'troupe.environment.create' && m.headers?.get(REQUEST_ID_HEADER) === rid)
  while (!carried() && Date.now() < deadline) await nc.flush()
  t.ok(carried(), `the request carried ${REQUEST_ID_HEADER}: ${rid}`)
})
