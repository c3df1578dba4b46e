// Hostile input (issue 16): every class answers a 4xx envelope naming the field and the rule, nothing reaches
// NATS unchecked, and nothing already stored changes. Each block starts with the repro that found it.
import t, { type Test } from 'tap'
import { encodeCursor } from '../../protocol/cursor.js'
import { stack } from '../helpers/stack.js'
import { raw, settledLogLines } from '../helpers/troupe.js'

const s = await stack()
const agent = await s.client.beta.agents.create({ name: 'canary', model: 'claude-sonnet-4-5', metadata: { k: 'v' } })
const env = await s.client.beta.environments.create({ name: 'canary' })
const session = await s.client.beta.sessions.create({ agent: agent.id, environment_id: env.id })

/** A 4xx with the envelope, its request id matching the header. */
function envelope(t: Test, r: Awaited<ReturnType<typeof raw>>, status: number, label: string) {
  t.equal(r.status, status, label)
  t.equal(r.json?.type, 'error', `${label}: envelope`)
  t.equal(r.json?.request_id, r.headers.get('request-id'), `${label}: request id`)
  return r.json?.error as { type: string; message: string } | undefined
}

t.test('path ids that are not valid percent-encoding are a 404', async (t) => {
  for (const [method, path] of [
    ['POST', '/v1/agents/%/archive'],
    ['GET', '/v1/sessions/sesn_%ED%A0%80'],
    ['GET', '/v1/environments/env_%'],
    ['GET', `/v1/agents/agent_${'x'.repeat(10_000)}`],
    ['GET', '/v1/sessions/sesn_a.b/events'],
    ['GET', '/v1/agents/agent_%2A'],
  ] as const) {
    const e = envelope(t, await raw(s.url, method, path), 404, `${method} ${path.slice(0, 40)}`)
    t.equal(e?.type, 'not_found_error')
    t.ok((e?.message.length ?? 0) < 200, 'the message does not echo a huge id whole')
  }
})

t.test('ids in bodies and queries: malformed is a 400 naming the field, well-formed but missing a 404 naming it', async (t) => {
  for (const id of ['env_*', 'a..b', ' ', 'ÿ', 'env_\ud800', 'env_a.b', 'env_>', `env_${'x'.repeat(200)}`]) {
    const e = envelope(t, await raw(s.url, 'POST', '/v1/sessions', { agent: agent.id, environment_id: id }), 400, JSON.stringify(id).slice(0, 30))
    t.match(e?.message, /^environment_id must be an id like env_01… \(letters, digits, _ or - after env_, at most 128 characters\)/)
  }
  const missingEnv = envelope(t, await raw(s.url, 'POST', '/v1/sessions', { agent: agent.id, environment_id: 'env_01NOSUCHTHING' }), 404, 'missing env')
  t.equal(missingEnv?.type, 'not_found_error')
  t.match(missingEnv?.message, /^environment_id: Environment env_01NOSUCHTHING not found/)
  for (const a of ['agent_*', 'a..b', { type: 'agent', id: 'agent_a.b' }]) {
    const e = envelope(t, await raw(s.url, 'POST', '/v1/sessions', { agent: a, environment_id: env.id }), 400, JSON.stringify(a))
    t.match(e?.message, /^agent(\.id)? must be an id like agent_01…/)
  }
  const missingAgent = envelope(t, await raw(s.url, 'POST', '/v1/sessions', { agent: 'agent_01NOSUCHTHING', environment_id: env.id }), 404, 'missing agent')
  t.match(missingAgent?.message, /^agent: Agent agent_01NOSUCHTHING not found/)
  for (const [field, value] of [
    ['vault_ids', ['vlt_*']],
    ['resources', [{ type: 'file', file_id: 'file_a b' }]],
  ] as const) {
    const e = envelope(t, await raw(s.url, 'POST', '/v1/sessions', { agent: agent.id, environment_id: env.id, [field]: value }), 400, field)
    t.match(e?.message, new RegExp(`^${field}\\[0\\](\\.file_id)? must be an id like`))
  }
  for (const q of ['agent_id=a..b', 'agent_id=agent_*', 'deployment_id=x', 'memory_store_id=memstore_%3E']) {
    const e = envelope(t, await raw(s.url, 'GET', `/v1/sessions?${q}`), 400, q)
    t.match(e?.message, /must be an id like/)
  }
  const events = (type: string, field: string, id: string) => ({
    events: [{ type, [field]: id, ...(type === 'user.tool_confirmation' ? { result: 'allow' } : {}) }],
  })
  for (const [type, field] of [
    ['user.tool_confirmation', 'tool_use_id'],
    ['user.custom_tool_result', 'custom_tool_use_id'],
    ['user.interrupt', 'session_thread_id'],
  ]) {
    const e = envelope(t, await raw(s.url, 'POST', `/v1/sessions/${session.id}/events`, events(type!, field!, 'x.*>')), 400, `${type} ${field}`)
    t.match(e?.message, new RegExp(`^events\\[0\\]\\.${field} must be an id like`))
  }
})

t.test('a forged cursor (the fingerprint is a checksum anyone can compute) is a 400, whatever its position holds', async (t) => {
  for (const after of ['x', -1, 1e300, {}, [1], null, { id: 1 }]) {
    const page = encodeCursor('agent_versions', { agent_id: agent.id }, after)
    const e = envelope(t, await raw(s.url, 'GET', `/v1/agents/${agent.id}/versions?page=${page}`), 400, `versions after ${JSON.stringify(after)}`)
    t.match(e?.message, /^page must be a cursor returned by this endpoint/)
  }
})

t.test('nesting deeper than 64 levels is a 400 naming the limit, checked without recursion', async (t) => {
  const nest = (depth: number, inner = '1') => '['.repeat(depth) + inner + ']'.repeat(depth)
  const schema = `{"name":"deep","model":"claude-sonnet-4-5","tools":[{"type":"custom","name":"t","description":"d","input_schema":{"type":"object","properties":{"x":${nest(5000)}}}}]}`
  const message = `{"events":[{"type":"user.message","content":${nest(20_000, '{"type":"text","text":"x"}')}}]}`
  for (const [label, path, body] of [
    ['agent tool schema 5,000 deep', '/v1/agents', schema],
    ['user.message content 20,000 deep', `/v1/sessions/${session.id}/events`, message],
    ['100,000 deep', '/v1/agents', `{"name":${nest(100_000)}}`],
    ['100,000 deep objects', '/v1/environments', `${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}`],
  ] as const) {
    const e = envelope(t, await raw(s.url, 'POST', path, body), 400, label)
    t.equal(e?.message, 'Request body nests objects and arrays more than 64 levels deep (the limit is 64)', label)
  }
  // Up to the limit is fine, brackets inside strings do not count.
  const ok = await raw(s.url, 'POST', '/v1/agents', {
    name: '[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[',
    model: 'claude-sonnet-4-5',
    tools: [{ type: 'custom', name: 't', description: 'd', input_schema: { type: 'object', properties: { x: JSON.parse(nest(55)) } } }],
  })
  t.equal(ok.status, 200, 'a schema 60 levels deep is accepted')
})

t.test('arrays are not objects anywhere', async (t) => {
  for (const path of [`/v1/agents/${agent.id}`, `/v1/environments/${env.id}`, `/v1/sessions/${session.id}`]) {
    const e = envelope(t, await raw(s.url, 'POST', path, '[]'), 400, `[] on ${path}`)
    t.equal(e?.message, 'body must be a JSON object, not an array')
  }
  for (const [path, body] of [
    ['/v1/agents', { name: 'a', model: 'claude-sonnet-4-5', metadata: ['x'] }],
    ['/v1/environments', { name: 'e', metadata: ['x'] }],
    ['/v1/sessions', { agent: agent.id, environment_id: env.id, metadata: ['x'] }],
    [`/v1/agents/${agent.id}`, { version: agent.version, metadata: ['x'] }],
    [`/v1/environments/${env.id}`, { metadata: ['x'] }],
    [`/v1/sessions/${session.id}`, { metadata: ['x'] }],
  ] as const) {
    const e = envelope(t, await raw(s.url, 'POST', path, body), 400, `metadata array on ${path}`)
    t.equal(e?.message, 'metadata must be an object (was an array)')
  }
  const e = envelope(t, await raw(s.url, 'POST', '/v1/environments', { name: 'e', config: { type: 'cloud', packages: ['x'] } }), 400, 'packages array')
  t.match(e?.message, /^config\.packages must be an object \(was an array\)|config/)
})

t.test('collections past the shape bounds and __proto__ keys are a 400 before any schema runs', async (t) => {
  const wide = Object.fromEntries(Array.from({ length: 70_000 }, (_, i) => [`k${i}`, 'v']))
  for (const [label, path, body, message] of [
    ['a 70,000-key metadata patch', `/v1/environments/${env.id}`, { metadata: wide }, 'metadata has 70000 keys; an object in a request holds at most 1000'],
    [
      '500,000 unknown keys',
      '/v1/environments',
      Object.fromEntries(Array.from({ length: 500_000 }, (_, i) => [`x${i}`, 1])),
      'the body has 500000 keys; an object in a request holds at most 1000',
    ],
    [
      'metadata as 2,000,000 zeros',
      '/v1/sessions',
      { agent: agent.id, environment_id: env.id, metadata: new Array(2_000_000).fill(0) },
      'metadata has 2000000 items; an array in a request holds at most 10000',
    ],
    ['__proto__ in metadata', '/v1/environments', '{"name":"p","metadata":{"__proto__":"x"}}', 'metadata.__proto__: the key __proto__ is not allowed'],
    [
      '__proto__ in a tool schema',
      '/v1/agents',
      '{"name":"a","model":"claude-sonnet-4-5","tools":[{"type":"custom","name":"t","description":"d","input_schema":{"type":"object","properties":{"__proto__":{}}}}]}',
      'tools[0].input_schema.properties.__proto__: the key __proto__ is not allowed',
    ],
  ] as const) {
    const e = envelope(t, await raw(s.url, 'POST', path, body), 400, label)
    t.equal(e?.message, message, label)
  }
})

t.test('36 bodies of 5 MB, each refused after parsing, do not cost the host its partitions (checked below)', async (t) => {
  // The repro: too many events, so the whole body is parsed before the schema refuses it.
  const body = JSON.stringify({ events: Array.from({ length: 30_000 }, () => ({ type: 'user.message', content: [{ type: 'text', text: 'x'.repeat(140) }] })) })
  t.ok(body.length > 5e6, `${(body.length / 1e6).toFixed(1)} MB`)
  const statuses: number[] = []
  let next = 0
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next++ < 36) statuses.push((await raw(s.url, 'POST', `/v1/sessions/${session.id}/events`, body)).status)
    }),
  )
  t.same(statuses, new Array(36).fill(400))
  t.equal((await raw(s.url, 'GET', '/readyz')).status, 200, 'still ready')
})

t.test('nothing stored changed, and the host kept its partitions', async (t) => {
  t.same(await s.client.beta.agents.retrieve(agent.id), agent)
  const got = await s.client.beta.environments.retrieve(env.id)
  t.same(got.metadata, env.metadata)
  t.equal((await s.client.beta.sessions.retrieve(session.id)).id, session.id)
  const lines = await settledLogLines(s.troupe)
  t.same(
    lines.filter((l) => l.level === 50),
    [],
    'no errors logged',
  )
  const changes = lines.filter((l) => l.msg === 'partitions changed')
  t.equal(changes.length, 1, 'partitions changed once (at start-up), never after')
})
