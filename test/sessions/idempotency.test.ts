import t from 'tap'
import '../helpers/keepalive.js'
import { startFakeModelServer } from '../fakes/model-server.js'
import { startNats } from '../helpers/nats.js'
import { clientFor, raw, startTroupe } from '../helpers/troupe.js'
import { agentAndEnv, until } from './_helpers.js'

// One POST, one stored copy: a retry that carries the same Idempotency-Key (the official client sends it with
// `{ headers: { 'Idempotency-Key': key } }`) is answered with what the first attempt stored, on the same host or
// on the one that took the session over, and stores nothing twice.

const model = await startFakeModelServer()
const nats = await startNats()
const env = { TROUPE_MODEL_BASE_URL: model.url, ANTHROPIC_API_KEY: 'k', TROUPE_MODEL_RETRY_BASE_MS: '20' }
let host = await startTroupe({ natsUrl: nats.url, env })
t.teardown(() => {
  host.killNow()
  nats.stopNow()
  void model.close()
})
const client = () => clientFor(host.url, { maxRetries: 3 })
const { agent, env: environment } = await agentAndEnv(client())

const message = (text: string) => ({ events: [{ type: 'user.message', content: [{ type: 'text', text }] }] })
const send = (sessionId: string, body: unknown, key?: string) =>
  raw(host.url, 'POST', `/v1/sessions/${sessionId}/events`, body, key === undefined ? {} : { 'idempotency-key': key })

async function history(sessionId: string) {
  const all: any[] = []
  for await (const e of client().beta.sessions.events.list(sessionId, { limit: 1000 } as any)) all.push(e)
  return all
}

const untilIdle = (sessionId: string) =>
  until('the session to be idle', async () => (await client().beta.sessions.retrieve(sessionId)).status === 'idle', 20_000, 50)

t.test('events sent twice with one key are stored once; both answers name the same events', async (t) => {
  model.enqueue({ steps: [{ type: 'text', text: 'once' }] })
  const session = await client().beta.sessions.create({ agent: agent.id, environment_id: environment.id } as any)
  const body = { events: [...message('hello').events, ...message('again').events] }
  const first = await send(session.id, body, 'key-1')
  const second = await send(session.id, body, 'key-1')
  t.equal(first.status, 200)
  t.equal(second.status, 200)
  t.same(
    second.json.data.map((e: any) => e.id),
    first.json.data.map((e: any) => e.id),
    'the retry names the stored events',
  )
  await untilIdle(session.id)
  const users = (await history(session.id)).filter((e) => e.type === 'user.message')
  t.same(
    users.map((e) => e.id),
    first.json.data.map((e: any) => e.id),
    'stored once, in order',
  )
  // The same body without a key, or with another key, is a new request.
  model.enqueue({ steps: [{ type: 'text', text: 'twice' }] })
  const third = await send(session.id, message('hello'), 'key-2')
  t.equal(third.status, 200)
  t.not(third.json.data[0].id, first.json.data[0].id)
})

t.test('the official client carries the key through its own retries', async (t) => {
  model.enqueue({ steps: [{ type: 'text', text: 'ok' }] })
  const session = await client().beta.sessions.create({ agent: agent.id, environment_id: environment.id } as any)
  const opts = { headers: { 'Idempotency-Key': 'sdk-key' } }
  const a = await client().beta.sessions.events.send(session.id, message('hi') as any, opts)
  const b = await client().beta.sessions.events.send(session.id, message('hi') as any, opts)
  t.same(
    b.data?.map((e) => e.id),
    a.data?.map((e) => e.id),
  )
  await untilIdle(session.id)
  t.equal((await history(session.id)).filter((e) => e.type === 'user.message').length, 1)
})

t.test('a key used again with another body is refused, and nothing is stored', async (t) => {
  const session = await client().beta.sessions.create({ agent: agent.id, environment_id: environment.id } as any)
  model.enqueue({ steps: [{ type: 'text', text: 'ok' }] })
  t.equal((await send(session.id, message('one'), 'reused')).status, 200)
  await untilIdle(session.id)
  const before = (await history(session.id)).length
  const res = await send(session.id, message('two'), 'reused')
  t.equal(res.status, 422)
  t.equal(res.json.error.type, 'invalid_request_error')
  t.equal(res.json.error.details?.error_code, 'idempotency_key_reused')
  t.match(res.json.error.message, /Idempotency-Key header/)
  t.equal((await history(session.id)).length, before)
})

t.test('a malformed key is a 400 naming the header, before anything is stored', async (t) => {
  const session = await client().beta.sessions.create({ agent: agent.id, environment_id: environment.id } as any)
  for (const key of ['has space', 'x'.repeat(256), 'é']) {
    const res = await send(session.id, message('no'), key)
    t.equal(res.status, 400, JSON.stringify(key.slice(0, 10)))
    t.match(res.json.error.message, /^Idempotency-Key header: /)
  }
  t.same(await history(session.id), [])
})

t.test('a create sent twice with one key makes one session, its initial events stored once', async (t) => {
  model.enqueue({ steps: [{ type: 'text', text: 'created' }] })
  const body = { agent: agent.id, environment_id: environment.id, initial_events: message('start').events }
  const a = await raw(host.url, 'POST', '/v1/sessions', body, { 'idempotency-key': 'create-1' })
  const b = await raw(host.url, 'POST', '/v1/sessions', body, { 'idempotency-key': 'create-1' })
  t.equal(a.status, 200)
  t.equal(b.status, 200)
  t.equal(b.json.id, a.json.id, 'the retry answers with the session the first attempt created')
  await untilIdle(a.json.id)
  t.equal((await history(a.json.id)).filter((e) => e.type === 'user.message').length, 1)
  const other = await raw(host.url, 'POST', '/v1/sessions', { ...body, title: 'other' }, { 'idempotency-key': 'create-1' })
  t.equal(other.status, 422)
  t.equal(other.json.error.details?.error_code, 'idempotency_key_reused')
  const plain = await raw(host.url, 'POST', '/v1/sessions', { agent: agent.id, environment_id: environment.id })
  t.not(plain.json.id, a.json.id, 'without a key every create is new')
})

t.test('a retry reaching the host that took the session over is recognised from the stored history', async (t) => {
  model.enqueue({ steps: [{ type: 'text', text: 'before the crash' }] })
  const session = await client().beta.sessions.create({ agent: agent.id, environment_id: environment.id } as any)
  const first = await send(session.id, message('survive'), 'takeover-key')
  t.equal(first.status, 200)
  await untilIdle(session.id)
  // The owner dies; a new host on the same NATS takes its partitions once its heartbeat has lapsed.
  await host.kill()
  host = await startTroupe({ natsUrl: nats.url, env })
  let again = await send(session.id, message('survive'), 'takeover-key')
  for (let i = 0; again.status === 503 && i < 100; i++) {
    await new Promise((r) => setTimeout(r, Number(again.headers.get('retry-after-ms') ?? 100)))
    again = await send(session.id, message('survive'), 'takeover-key')
  }
  t.equal(again.status, 200)
  t.same(
    again.json.data.map((e: any) => e.id),
    first.json.data.map((e: any) => e.id),
  )
  t.equal((await history(session.id)).filter((e) => e.type === 'user.message').length, 1)
})

t.test('two attempts with one key that arrive together, while the actor loads, store once', async (t) => {
  const session = await client().beta.sessions.create({ agent: agent.id, environment_id: environment.id } as any)
  // A new host: the session's actor is not in memory, so both attempts wait for the same load and go on together.
  await host.kill()
  host = await startTroupe({ natsUrl: nats.url, env })
  const interrupt = { events: [{ type: 'user.interrupt' }] }
  let answers = await Promise.all([send(session.id, interrupt, 'together'), send(session.id, interrupt, 'together')])
  for (let i = 0; answers.some((a) => a.status === 503) && i < 100; i++) {
    await new Promise((r) => setTimeout(r, 100))
    answers = await Promise.all([send(session.id, interrupt, 'together'), send(session.id, interrupt, 'together')])
  }
  t.same(
    answers.map((a) => a.status),
    [200, 200],
  )
  t.equal(answers[0]!.json.data[0].id, answers[1]!.json.data[0].id, 'both answers name one event')
  t.equal((await history(session.id)).filter((e) => e.type === 'user.interrupt').length, 1, 'stored once')
})

t.test('agents and environments created twice with one key are created once', async (t) => {
  for (const [path, body] of [
    ['/v1/agents', { name: 'keyed', model: 'claude-sonnet-4-5' }],
    ['/v1/environments', { name: 'keyed' }],
  ] as const) {
    const a = await raw(host.url, 'POST', path, body, { 'idempotency-key': `same-${path}` })
    const b = await raw(host.url, 'POST', path, body, { 'idempotency-key': `same-${path}` })
    t.equal(a.status, 200, path)
    t.same(b.json, a.json, `${path}: the retry answers with what the first attempt created`)
    const other = await raw(host.url, 'POST', path, { ...body, name: 'other' }, { 'idempotency-key': `same-${path}` })
    t.equal(other.status, 422, path)
    t.equal(other.json.error.details?.error_code, 'idempotency_key_reused')
    const list = await raw(host.url, 'GET', `${path}?limit=100`)
    t.equal(list.json.data.filter((x: any) => x.name === 'keyed').length, 1, `${path}: one stored`)
  }
})

t.test('a keyed agent create retried after the agent was updated and archived still answers with the agent it made', async (t) => {
  const body = { name: 'keyed-then-updated', model: 'claude-sonnet-4-5' }
  const first = await raw(host.url, 'POST', '/v1/agents', body, { 'idempotency-key': 'agent-then-update' })
  t.equal(first.status, 200)
  const updated = await raw(host.url, 'POST', `/v1/agents/${first.json.id}`, { version: 1, system: 'changed' })
  t.equal(updated.json.version, 2)
  t.equal((await raw(host.url, 'POST', `/v1/agents/${first.json.id}/archive`)).status, 200)
  const again = await raw(host.url, 'POST', '/v1/agents', body, { 'idempotency-key': 'agent-then-update' })
  t.equal(again.status, 200, 'not idempotency_key_reused: the head kept the create fingerprint')
  t.equal(again.json.id, first.json.id)
  t.equal(again.json.version, 1, 'the answer is the agent as created')
  const other = await raw(host.url, 'POST', '/v1/agents', { ...body, name: 'other' }, { 'idempotency-key': 'agent-then-update' })
  t.equal(other.json.error?.details?.error_code, 'idempotency_key_reused')
})
