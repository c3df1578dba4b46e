import t from 'tap'
import { raw } from '../helpers/troupe.js'
import { agentAndEnv, collect, isIdle, sessionStack, failure, isError } from './_helpers.js'

// SPEC "Sessions": update body rules 1–4 and 6; the "session.updated" event.

const s = await sessionStack()
const sessions = s.client.beta.sessions

async function newSession(extra: Record<string, unknown> = {}, agent: Record<string, unknown> = {}) {
  const { agent: a, env } = await agentAndEnv(s.client, agent)
  return sessions.create({ agent: a.id, environment_id: env.id, ...extra } as any)
}

const update = (id: string, body: Record<string, unknown>) => sessions.update(id, body as any)
/** The session.updated events of a session's history, oldest first. */
const updates = async (id: string) => (await sessions.events.list(id, { types: ['session.updated'] } as any)).data as any[]
/** An update event without its envelope: only the fields it carries. */
const fieldsOf = ({ id: _id, type: _type, processed_at: _at, ...rest }: any) => rest

const lookupTool = {
  type: 'custom',
  name: 'lookup',
  description: 'Looks a word up',
  input_schema: { type: 'object', properties: { word: { type: 'string' } } },
}

t.test('title: a string sets it, null clears it; each change is one session.updated with only the title', async (t) => {
  const session = await newSession({ title: 'first' })
  const a = await update(session.id, { title: 'second' })
  t.equal(a.title, 'second')
  t.equal((await sessions.retrieve(session.id)).title, 'second')
  const b = await update(session.id, { title: null })
  t.equal(b.title, null, 'null is not a no-op: it clears')
  t.equal((await sessions.retrieve(session.id)).title, null)
  const ev = await updates(session.id)
  t.same(ev.map(fieldsOf), [{ title: 'second' }, { title: null }])
  for (const e of ev) {
    t.match(e.id, /^sevt_/)
    t.ok(e.processed_at)
  }
})

t.test('metadata: a per-key patch; null deletes a key; the event carries the whole map', async (t) => {
  const session = await newSession({ metadata: { keep: '1', drop: '2' } })
  const u = await update(session.id, { metadata: { drop: null, add: '3', keep: '1' } })
  t.same(u.metadata, { keep: '1', add: '3' })
  t.same((await sessions.retrieve(session.id)).metadata, { keep: '1', add: '3' })
  t.same((await updates(session.id)).map(fieldsOf), [{ metadata: { keep: '1', add: '3' } }])
  const listed = (await sessions.list({ agent_id: session.agent.id })).data[0]!
  t.same(listed.metadata, { keep: '1', add: '3' }, 'the list sees the change')
  t.same((await update(session.id, { metadata: { add: '' } })).metadata, { keep: '1', add: '' }, 'an empty string is a value, not a delete')
  const untouched = await update(session.id, { title: 'x' })
  t.same(untouched.metadata, { keep: '1', add: '' }, 'omitted metadata keeps the whole map')
  const cleared = await update(session.id, { metadata: null })
  t.same(cleared.metadata, { keep: '1', add: '' }, 'metadata: null patches nothing')
})

t.test('metadata: more than 16 keys after the patch is a 400', async (t) => {
  const fifteen = Object.fromEntries(Array.from({ length: 15 }, (_, i) => [`k${i}`, 'v']))
  const session = await newSession({ metadata: fifteen })
  t.equal(Object.keys((await update(session.id, { metadata: { k15: 'v' } })).metadata).length, 16, 'sixteen is fine')
  isError(t, await failure(update(session.id, { metadata: { k16: 'v' } })), 400, 'invalid_request_error', /metadata.*16/)
  t.equal(Object.keys((await sessions.retrieve(session.id)).metadata).length, 16, 'the refused patch changed nothing')
  t.equal((await updates(session.id)).length, 1, 'and emitted nothing')
  // A patch that deletes as much as it adds stays within the limit.
  const swapped = await update(session.id, { metadata: { k0: null, k16: 'v' } })
  t.equal(Object.keys(swapped.metadata).length, 16)
})

t.test('agent.tools and agent.mcp_servers replace the lists, session-locally, from the next turn', async (t) => {
  const { agent, env } = await agentAndEnv(s.client)
  const session = await sessions.create({ agent: agent.id, environment_id: env.id } as any)
  const mcp = { type: 'url', name: 'docs', url: 'https://mcp.example.com/sse' }
  const u = await update(session.id, { agent: { tools: [lookupTool, { type: 'mcp_toolset', mcp_server_name: 'docs' }], mcp_servers: [mcp] } })
  t.same(
    u.agent.tools.map((x: any) => x.name ?? x.type),
    ['lookup', 'mcp_toolset'],
  )
  t.same(u.agent.mcp_servers, [mcp])
  t.equal(u.agent.version, agent.version, 'the snapshot keeps its version')
  const after = await s.client.beta.agents.retrieve(agent.id)
  t.equal(after.version, 1, 'the agent resource is not renumbered')
  t.same(after.tools, [])
  t.same(after.mcp_servers, [])
  const ev = await updates(session.id)
  t.equal(ev.length, 1)
  t.same(Object.keys(fieldsOf(ev[0])), ['agent'], 'only the agent changed')
  t.same(ev[0].agent, u.agent, 'the event carries the full new snapshot')

  // The next turn offers the new tool to the model.
  const before = s.model.requests.length
  const stream = await sessions.events.stream(session.id)
  await sessions.events.send(session.id, { events: [{ type: 'user.message', content: [{ type: 'text', text: 'hi' }] }] } as any)
  await collect(stream, isIdle)
  t.same(
    s.model.requests[before]!.body.tools?.map((x: any) => x.name),
    ['lookup'],
  )

  // An omitted list is kept; [] clears.
  const kept = await update(session.id, { agent: { tools: [{ type: 'mcp_toolset', mcp_server_name: 'docs' }] } })
  t.same(
    kept.agent.tools.map((x: any) => x.type),
    ['mcp_toolset'],
  )
  t.same(kept.agent.mcp_servers, [mcp], 'omitted mcp_servers kept')
  const cleared = await update(session.id, { agent: { tools: [], mcp_servers: [] } })
  t.same(cleared.agent.tools, [])
  t.same(cleared.agent.mcp_servers, [])
  // A replacement that leaves a toolset without its server is refused, naming the field.
  const bad = await failure(update(session.id, { agent: { tools: [{ type: 'mcp_toolset', mcp_server_name: 'elsewhere' }] } }))
  isError(t, bad, 400, 'invalid_request_error', /agent\..*elsewhere/)
})

t.test('agent changes need an idle session: 409 while running, accepted after an interrupt', async (t) => {
  const session = await newSession()
  const stream = await sessions.events.stream(session.id)
  const before = s.model.requests.length
  s.model.enqueue({ hang: true })
  await sessions.events.send(session.id, { events: [{ type: 'user.message', content: [{ type: 'text', text: 'hang' }] }] } as any)
  await s.model.waitForRequests(before + 1)
  t.equal((await sessions.retrieve(session.id)).status, 'running')

  const err = await failure(update(session.id, { agent: { tools: [lookupTool] } }))
  isError(t, err, 409, 'conflict_error', /running|idle/)
  t.equal(err.headers?.get('x-should-retry'), 'false')
  // title and metadata have no idle precondition
  t.equal((await update(session.id, { title: 'while running' })).title, 'while running')

  await sessions.events.send(session.id, { events: [{ type: 'user.interrupt' }] } as any)
  await collect(stream, isIdle)
  const u = await update(session.id, { agent: { tools: [lookupTool] } })
  t.same(
    u.agent.tools.map((x: any) => x.name),
    ['lookup'],
  )
  t.same(
    (await updates(session.id)).map((e) => Object.keys(fieldsOf(e))),
    [['title'], ['agent']],
  )
})

t.test('agent.model, agent.system and agent.skills are rejected (400)', async (t) => {
  const session = await newSession()
  for (const [field, value] of [
    ['model', 'claude-haiku-4-5'],
    ['system', 'new'],
    ['skills', []],
  ] as const) {
    const r = await raw(s.url, 'POST', `/v1/sessions/${session.id}`, { agent: { [field]: value } })
    t.equal(r.status, 400, `${field}: ${r.text}`)
    t.equal(r.json?.error?.type, 'invalid_request_error')
    t.match(r.json?.error?.message, new RegExp(`agent\\.${field}`), `names agent.${field}`)
  }
  const r = await raw(s.url, 'POST', `/v1/sessions/${session.id}`, { agent: { tools: [], system: 'x' } })
  t.equal(r.status, 400, 'refused even beside an allowed field')
  t.same((await sessions.retrieve(session.id)).agent.tools, session.agent.tools, 'nothing applied')
  t.same(await updates(session.id), [])
})

t.test('vault_ids is rejected on update (400)', async (t) => {
  const session = await newSession()
  for (const value of [['vlt_01A'], []]) {
    const r = await raw(s.url, 'POST', `/v1/sessions/${session.id}`, { vault_ids: value })
    t.equal(r.status, 400, r.text)
    t.equal(r.json?.error?.type, 'invalid_request_error')
    t.match(r.json?.error?.message, /vault_ids/)
  }
})

t.test('unknown fields and bad shapes are a 400 naming the field', async (t) => {
  const session = await newSession()
  const cases: Array<[unknown, RegExp]> = [
    [{ colour: 'blue' }, /colour/],
    [{ title: 5 }, /title/],
    [{ metadata: { k: 5 } }, /metadata\.k/],
    [{ agent: { name: 'x' } }, /agent\.name/],
    [{ agent: { tools: 'none' } }, /agent\.tools/],
  ]
  for (const [body, field] of cases) {
    const r = await raw(s.url, 'POST', `/v1/sessions/${session.id}`, body)
    t.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`)
    t.match(r.json?.error?.message, field, `names ${field.source}`)
  }
  t.same(await updates(session.id), [])
})

t.test('several fields in one request: one event carrying exactly the changed ones', async (t) => {
  const session = await newSession({ title: 'same', metadata: { a: '1' } })
  const u = await update(session.id, { title: 'same', metadata: { b: '2' }, agent: { tools: [lookupTool] } })
  t.equal(u.title, 'same')
  const ev = await updates(session.id)
  t.equal(ev.length, 1, 'exactly one event')
  t.same(Object.keys(fieldsOf(ev[0])).sort(), ['agent', 'metadata'], 'the unchanged title is not in it')
  t.same(ev[0].metadata, { a: '1', b: '2' })
})

t.test('an update that changes nothing emits no event and returns the session', async (t) => {
  const session = await newSession({ title: 't', metadata: { a: '1' } }, { tools: [lookupTool] })
  const before = await sessions.retrieve(session.id)
  for (const body of [{}, { title: 't' }, { metadata: { a: '1' } }, { metadata: { gone: null } }, { agent: { tools: before.agent.tools } }, { agent: {} }]) {
    const u = await update(session.id, body)
    t.equal(u.id, session.id, JSON.stringify(body))
    t.equal(u.title, 't')
    t.same(u.metadata, { a: '1' })
    t.same(u.agent, before.agent)
  }
  t.same(await updates(session.id), [], 'no session.updated')
  t.same((await sessions.events.list(session.id)).data, [], 'no event at all')
  t.equal((await sessions.retrieve(session.id)).updated_at, before.updated_at, 'updated_at unchanged')
})

t.test('an update moves updated_at; the session stream sees the event live', async (t) => {
  const session = await newSession()
  const stream = await sessions.events.stream(session.id)
  const u = await update(session.id, { title: 'live' })
  t.ok(u.updated_at >= session.updated_at)
  const [ev] = await collect(stream, (e) => e.type === 'session.updated')
  t.same(fieldsOf(ev), { title: 'live' })
  t.equal(u.updated_at, ev.processed_at, 'updated_at is the time of the change')
})

t.test('unknown session: 404', async (t) => {
  isError(t, await failure(update('sesn_01NOPE0000000000000000000', { title: 'x' })), 404, 'not_found_error', /sesn_01NOPE/)
})
