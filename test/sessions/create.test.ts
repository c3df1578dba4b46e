import t from 'tap'
import { raw } from '../helpers/troupe.js'
import { agentAndEnv, sessionStack, failure, isError, until } from './_helpers.js'

// SPEC "Sessions": create body, create rules 1–8, and the session state table's first rows.

// The local backend: it refuses limited networking and packages at admission, which tests below rely on.
const s = await sessionStack({ TROUPE_SANDBOX: 'local' })
const sessions = s.client.beta.sessions
const agents = s.client.beta.agents
const environments = s.client.beta.environments

const create = (body: Record<string, unknown>) => sessions.create(body as any)
const post = (body: unknown) => raw(s.url, 'POST', '/v1/sessions', body)

t.test('agent as an id string runs the latest version', async (t) => {
  const { agent, env } = await agentAndEnv(s.client, { system: 'v1' })
  await agents.update(agent.id, { version: agent.version, system: 'v2' } as any)
  const session = await create({ agent: agent.id, environment_id: env.id })
  t.match(session.id, /^sesn_/)
  t.equal(session.type, 'session')
  t.equal(session.status, 'idle')
  t.equal(session.environment_id, env.id)
  t.equal(session.agent.id, agent.id)
  t.equal(session.agent.version, 2)
  t.equal(session.agent.system, 'v2')
  t.equal(session.agent.multiagent, null)
  t.equal(session.title, null)
  t.same(session.metadata, {})
  t.equal(session.budget, null)
  t.same(session.resources, [])
  t.same(session.vault_ids, [])
  t.equal(session.deployment_id, null)
  t.equal(session.archived_at, null)
  const { stats: _a, ...created } = session as any
  const { stats: _b, ...got } = (await sessions.retrieve(session.id)) as any
  t.same(got, created, 'GET returns what create returned')
})

t.test('{type: agent, id, version} snapshots that exact older version', async (t) => {
  const { agent, env } = await agentAndEnv(s.client, { system: 'first' })
  await agents.update(agent.id, { version: 1, system: 'second' } as any)
  const session = await create({ agent: { type: 'agent', id: agent.id, version: 1 }, environment_id: env.id })
  t.equal(session.agent.version, 1)
  t.equal(session.agent.system, 'first')
  const latest = await create({ agent: { type: 'agent', id: agent.id }, environment_id: env.id })
  t.equal(latest.agent.version, 2, 'without a version, the latest')
  const err = await failure(create({ agent: { type: 'agent', id: agent.id, version: 7 }, environment_id: env.id }))
  t.equal(err.status, 404, 'a version that does not exist')
})

t.test('agent_with_overrides replaces model, system, tools, mcp_servers for the session only', async (t) => {
  const { agent, env } = await agentAndEnv(s.client, { model: { id: 'claude-sonnet-4-5', effort: 'high' }, system: 'agent system' })
  const session = await create({
    agent: {
      type: 'agent_with_overrides',
      id: agent.id,
      model: 'claude-haiku-4-5',
      system: 'session system',
      tools: [{ type: 'agent_toolset_20260401' }, { type: 'mcp_toolset', mcp_server_name: 'docs' }],
      mcp_servers: [{ type: 'url', name: 'docs', url: 'https://mcp.example.com/sse' }],
    },
    environment_id: env.id,
  })
  t.equal(session.agent.id, agent.id)
  t.equal(session.agent.version, 1)
  t.equal(session.agent.model.id, 'claude-haiku-4-5')
  t.same(session.agent.model.effort, { type: 'high' }, "effort stays the agent's setting")
  t.equal(session.agent.system, 'session system')
  t.same(
    session.agent.tools.map((x: any) => x.type),
    ['agent_toolset_20260401', 'mcp_toolset'],
  )
  t.same(session.agent.mcp_servers, [{ type: 'url', name: 'docs', url: 'https://mcp.example.com/sse' }])
  const after = await agents.retrieve(agent.id)
  t.equal(after.version, 1, 'the agent is not renumbered')
  t.equal(after.system, 'agent system')
  t.equal(after.model.id, 'claude-sonnet-4-5')
  t.same(after.tools, [])
  t.equal((await agents.versions.list(agent.id)).data.length, 1, 'no new version')

  // Overrides apply on top of an exact older version too.
  await agents.update(agent.id, { version: 1, system: 'agent system v2' } as any)
  const old = await create({ agent: { type: 'agent_with_overrides', id: agent.id, version: 1, model: 'claude-haiku-4-5' }, environment_id: env.id })
  t.equal(old.agent.version, 1)
  t.equal(old.agent.system, 'agent system', "not overridden: version 1's own")
  t.equal(old.agent.model.id, 'claude-haiku-4-5')

  const err = await failure(
    create({
      agent: { type: 'agent_with_overrides', id: agent.id, model: { id: 'claude-haiku-4-5', effort: 'low' } },
      environment_id: env.id,
    }),
  )
  isError(t, err, 400, 'invalid_request_error', /effort/)
  const bad = await failure(
    create({
      agent: { type: 'agent_with_overrides', id: agent.id, tools: [{ type: 'mcp_toolset', mcp_server_name: 'nowhere' }] },
      environment_id: env.id,
    }),
  )
  isError(t, bad, 400, 'invalid_request_error', /agent\./, undefined)
})

t.test('a coordinator roster is captured as full definitions; self reflects the overrides', async (t) => {
  const { agent: worker, env } = await agentAndEnv(s.client, { name: 'worker', system: 'worker system' })
  const coord = await agents.create({
    name: 'coord',
    model: 'claude-sonnet-4-5',
    system: 'coord system',
    multiagent: { type: 'coordinator', agents: [worker.id, { type: 'self' }] },
  } as any)
  const session = await create({ agent: { type: 'agent_with_overrides', id: coord.id, system: 'overridden' }, environment_id: env.id })
  const roster = (session.agent.multiagent as any)?.agents as any[]
  t.equal(session.agent.multiagent?.type, 'coordinator')
  t.equal(roster.length, 2)
  t.match(roster[0], {
    type: 'agent',
    id: worker.id,
    version: 1,
    name: 'worker',
    system: 'worker system',
    model: { id: 'claude-sonnet-4-5' },
    tools: [],
    mcp_servers: [],
    skills: [],
  })
  t.match(roster[1], { type: 'agent', id: coord.id, version: 1, name: 'coord', system: 'overridden' }, 'self copy reflects the override')
  for (const m of roster) t.notOk('multiagent' in m, `${m.name} carries no multiagent of its own`)
})

t.test('a roster member pinned to an older version is captured at that version', async (t) => {
  const { agent: worker, env } = await agentAndEnv(s.client, { name: 'worker', system: 'w v1' })
  const coord = await agents.create({
    name: 'coord',
    model: 'claude-sonnet-4-5',
    multiagent: { type: 'coordinator', agents: [worker.id] },
  } as any)
  await agents.update(worker.id, { version: 1, system: 'w v2' } as any)
  const session = await create({ agent: coord.id, environment_id: env.id })
  const [member] = (session.agent.multiagent as any).agents
  t.match(member, { id: worker.id, version: 1, system: 'w v1' }, 'the version the coordinator pinned, not the latest')
})

t.test('the snapshot is immutable: later agent updates and archive do not change it', async (t) => {
  const { agent: worker, env } = await agentAndEnv(s.client, { name: 'w', system: 'w1' })
  const coord = await agents.create({
    name: 'c',
    model: 'claude-sonnet-4-5',
    system: 'c1',
    multiagent: { type: 'coordinator', agents: [worker.id] },
  } as any)
  const session = await create({ agent: coord.id, environment_id: env.id })
  await agents.update(worker.id, { version: 1, system: 'w2' } as any)
  await agents.update(coord.id, { version: 1, system: 'c2' } as any)
  t.same((await sessions.retrieve(session.id)).agent, session.agent, 'after updates')
  await agents.archive(worker.id)
  await agents.archive(coord.id)
  t.same((await sessions.retrieve(session.id)).agent, session.agent, 'after archive')
})

t.test('an archived agent cannot start a new session (400)', async (t) => {
  const { agent, env } = await agentAndEnv(s.client)
  await agents.archive(agent.id)
  isError(t, await failure(create({ agent: agent.id, environment_id: env.id })), 400, 'invalid_request_error', new RegExp(agent.id), 'agent_archived')
  isError(
    t,
    await failure(create({ agent: { type: 'agent', id: agent.id, version: 1 }, environment_id: env.id })),
    400,
    'invalid_request_error',
    /archived/,
    'agent_archived',
  )
})

t.test('an unknown agent is a 404', async (t) => {
  const { env } = await agentAndEnv(s.client)
  isError(t, await failure(create({ agent: 'agent_01NOPE0000000000000000000', environment_id: env.id })), 404, 'not_found_error', /agent_01NOPE/)
  isError(
    t,
    await failure(create({ agent: { type: 'agent', id: 'agent_01NOPE0000000000000000000' }, environment_id: env.id })),
    404,
    'not_found_error',
    /agent_01NOPE/,
  )
})

t.test('an unknown environment is a 404', async (t) => {
  const { agent } = await agentAndEnv(s.client)
  isError(t, await failure(create({ agent: agent.id, environment_id: 'env_01NOPE0000000000000000000' })), 404, 'not_found_error', /env_01NOPE/)
})

t.test('an archived environment is a 400 environment_archived', async (t) => {
  const { agent, env } = await agentAndEnv(s.client)
  await environments.archive(env.id)
  isError(t, await failure(create({ agent: agent.id, environment_id: env.id })), 400, 'invalid_request_error', new RegExp(env.id), 'environment_archived')
})

t.test('limited networking is refused on this backend (422)', async (t) => {
  const { agent, env } = await agentAndEnv(s.client, {}, { config: { type: 'cloud', networking: { type: 'limited', allowed_hosts: ['example.com'] } } })
  isError(t, await failure(create({ agent: agent.id, environment_id: env.id })), 422, 'invalid_request_error', /environment_id.*limited networking/)
  // The refused session left no reference behind: the environment can be deleted.
  t.same(await environments.delete(env.id), { id: env.id, type: 'environment_deleted' })
})

t.test('non-empty packages are refused on this backend (422)', async (t) => {
  const { agent, env } = await agentAndEnv(s.client, {}, { config: { type: 'cloud', packages: { type: 'packages', pip: ['requests'] } } })
  isError(t, await failure(create({ agent: agent.id, environment_id: env.id })), 422, 'invalid_request_error', /environment_id.*pip/)
  t.same(await environments.delete(env.id), { id: env.id, type: 'environment_deleted' })
})

t.test('a self_hosted environment is accepted', async (t) => {
  const { agent, env } = await agentAndEnv(s.client, {}, { config: { type: 'self_hosted' } })
  const session = await create({ agent: agent.id, environment_id: env.id })
  t.equal(session.status, 'idle')
  t.equal(session.environment_id, env.id)
})

t.test('a session is a reference: its environment cannot be deleted until the session is', async (t) => {
  const { agent, env } = await agentAndEnv(s.client)
  const session = await create({ agent: agent.id, environment_id: env.id })
  const err = await failure(environments.delete(env.id))
  isError(t, err, 409, 'conflict_error', new RegExp(env.id))
  t.equal(err.headers?.get('x-should-retry'), 'false')
  await sessions.delete(session.id)
  t.same(await environments.delete(env.id), { id: env.id, type: 'environment_deleted' })
})

t.test('title and metadata are stored', async (t) => {
  const { agent, env } = await agentAndEnv(s.client)
  const session = await create({ agent: agent.id, environment_id: env.id, title: 'My run', metadata: { team: 'infra', ticket: '42' } })
  t.equal(session.title, 'My run')
  t.same(session.metadata, { team: 'infra', ticket: '42' })
  const got = await sessions.retrieve(session.id)
  t.equal(got.title, 'My run')
  t.same(got.metadata, { team: 'infra', ticket: '42' })
  const many = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v']))
  isError(t, await failure(create({ agent: agent.id, environment_id: env.id, metadata: many })), 400, 'invalid_request_error', /metadata/)
  isError(t, await failure(create({ agent: agent.id, environment_id: env.id, title: 7 })), 400, 'invalid_request_error', /title/)
})

t.test('non-empty initial_events: running at once, and the turn runs', async (t) => {
  const { agent, env } = await agentAndEnv(s.client, { system: 'be brief' })
  const before = s.model.requests.length
  s.model.enqueue({ steps: [{ type: 'text', text: 'answer from the model' }] })
  const session = await create({
    agent: agent.id,
    environment_id: env.id,
    initial_events: [{ type: 'user.message', content: [{ type: 'text', text: 'first question' }] }],
  })
  t.equal(session.status, 'running')
  const events = await until('the turn to end', async () => {
    const list = await sessions.events.list(session.id)
    return list.data.some((e: any) => e.type === 'session.status_idle') && list.data
  })
  const types = events.map((e: any) => e.type)
  t.same(types, ['user.message', 'session.status_running', 'span.model_request_start', 'agent.message', 'span.model_request_end', 'session.status_idle'])
  t.same((events.find((e: any) => e.type === 'agent.message') as any).content, [{ type: 'text', text: 'answer from the model' }])
  t.ok(events[0]!.processed_at, 'the initial event was processed')
  const req = s.model.requests[before]!
  t.equal(req.body.system, 'be brief')
  t.same(req.body.messages, [{ role: 'user', content: [{ type: 'text', text: 'first question' }] }])
  t.equal((await sessions.retrieve(session.id)).status, 'idle')
})

t.test('initial_events: more than 50 is a 400', async (t) => {
  const { agent, env } = await agentAndEnv(s.client)
  const msg = { type: 'user.message', content: [{ type: 'text', text: 'x' }] }
  isError(
    t,
    await failure(create({ agent: agent.id, environment_id: env.id, initial_events: Array(51).fill(msg) })),
    400,
    'invalid_request_error',
    /initial_events/,
  )
})

t.test('initial_events: system.message is a 400', async (t) => {
  const { agent, env } = await agentAndEnv(s.client)
  const err = await failure(
    create({
      agent: agent.id,
      environment_id: env.id,
      initial_events: [
        { type: 'user.message', content: [{ type: 'text', text: 'x' }] },
        { type: 'system.message', content: [{ type: 'text', text: 'note' }] },
      ],
    }),
  )
  isError(t, err, 400, 'invalid_request_error', /initial_events\[1\]/)
})

t.test(
  'resources: every kind but files and memory stores is a 422 on this server (files: resources.test.ts; memory stores: test/memory/sessions.test.ts)',
  async (t) => {
    const { agent, env } = await agentAndEnv(s.client)
    const kinds = [{ type: 'github_repository', url: 'https://github.com/o/r' }, { type: 'banana' }]
    for (const r of kinds) {
      const err = await failure(create({ agent: agent.id, environment_id: env.id, resources: [r] }))
      isError(t, err, 422, 'invalid_request_error', new RegExp(`resources\\[0\\].*${r.type}`))
    }
    // Nothing was created by the refusals.
    t.same(await environments.delete(env.id), { id: env.id, type: 'environment_deleted' })
  },
)

t.test('vault_ids without a keyring: refused (422); duplicates are a 400', async (t) => {
  const { agent, env } = await agentAndEnv(s.client)
  isError(
    t,
    await failure(create({ agent: agent.id, environment_id: env.id, vault_ids: ['vlt_01A'] })),
    422,
    'invalid_request_error',
    /vault_ids: vaults need the operator keyring/,
    'vaults_unavailable',
  )
  isError(
    t,
    await failure(create({ agent: agent.id, environment_id: env.id, vault_ids: ['vlt_01A', 'vlt_01A'] })),
    400,
    'invalid_request_error',
    /vault_ids\[1\]/,
  )
  const ok = await create({ agent: agent.id, environment_id: env.id, vault_ids: [] })
  t.same(ok.vault_ids, [], 'an empty list is the default')
})

t.test('budget: a priced model is budgetable; bad amounts and unpriced models are 400', async (t) => {
  const { agent, env } = await agentAndEnv(s.client, { model: 'claude-sonnet-4-5' })
  const budget = { type: 'limit', max_list_cost: { amount: '2500', currency: 'USD' } }
  const ok = await create({ agent: agent.id, environment_id: env.id, budget })
  t.same(ok.budget, budget)
  const none = await create({ agent: agent.id, environment_id: env.id, budget: null })
  t.equal(none.budget, null, 'null selects no ceiling')
  for (const amount of ['abc', '-5', '012', '12.5', '']) {
    const err = await failure(create({ agent: agent.id, environment_id: env.id, budget: { type: 'limit', max_list_cost: { amount, currency: 'USD' } } }))
    isError(t, err, 400, 'invalid_request_error', /budget\.max_list_cost\.amount/)
  }
  isError(
    t,
    await failure(create({ agent: agent.id, environment_id: env.id, budget: { type: 'limit', max_list_cost: { amount: '100', currency: 'EUR' } } })),
    400,
    'invalid_request_error',
    /budget\.max_list_cost\.currency/,
  )

  const unpriced = await agents.create({ name: 'opaque', model: 'router-alias-made-up-7' } as any)
  isError(t, await failure(create({ agent: unpriced.id, environment_id: env.id, budget })), 400, 'invalid_request_error', /budget/, 'model_not_budgetable')
  // The override's model counts, not the agent's.
  isError(
    t,
    await failure(create({ agent: { type: 'agent_with_overrides', id: agent.id, model: 'router-alias-made-up-7' }, environment_id: env.id, budget })),
    400,
    'invalid_request_error',
    /budget/,
    'model_not_budgetable',
  )
  // So does every roster member's.
  const coord = await agents.create({ name: 'c', model: 'claude-sonnet-4-5', multiagent: { type: 'coordinator', agents: [unpriced.id] } } as any)
  isError(t, await failure(create({ agent: coord.id, environment_id: env.id, budget })), 400, 'invalid_request_error', /budget/, 'model_not_budgetable')
  t.ok(await create({ agent: unpriced.id, environment_id: env.id }), 'without a budget an unpriced model is fine')
})

t.test('bad input is a 400 naming the field', async (t) => {
  const { agent, env } = await agentAndEnv(s.client)
  const cases: Array<[string, unknown, RegExp]> = [
    ['missing agent', { environment_id: env.id }, /agent/],
    ['missing environment_id', { agent: agent.id }, /environment_id/],
    ['unknown top-level field', { agent: agent.id, environment_id: env.id, colour: 'blue' }, /colour/],
    ['agent of the wrong type', { agent: 5, environment_id: env.id }, /agent/],
    ['unknown agent reference type', { agent: { type: 'robot', id: agent.id }, environment_id: env.id }, /agent/],
    ['null initial_events', { agent: agent.id, environment_id: env.id, initial_events: null }, /initial_events/],
    ['null metadata', { agent: agent.id, environment_id: env.id, metadata: null }, /metadata/],
  ]
  for (const [name, body, field] of cases) {
    const r = await post(body)
    t.equal(r.status, 400, `${name}: ${r.text}`)
    t.equal(r.json?.error?.type, 'invalid_request_error', name)
    t.match(r.json?.error?.message, field, `${name} names ${field.source}`)
  }
  const r = await post('{not json')
  t.equal(r.status, 400, 'invalid JSON')
})
