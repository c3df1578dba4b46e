import t from 'tap'
import { raw } from '../helpers/troupe.js'
import { HELLO, deploy, deploymentStack, failure } from './_helpers.js'

// SPEC "Deployments": update (every field; omitted keeps), pause, unpause and archive (issue 24, point 1).

const s = await deploymentStack()
const deployments = s.client.beta.deployments
const update = (id: string, body: Record<string, unknown>) => deployments.update(id, body as any)
const EVERY_MINUTE = { type: 'cron', expression: '* * * * *', timezone: 'UTC' }

t.test('every field; omitted keeps', async (t) => {
  const { deployment: d } = await deploy(s.client, { description: 'x', metadata: { a: '1', b: '2' }, schedule: EVERY_MINUTE })
  const same = await update(d.id, {})
  t.same(same, await deployments.retrieve(d.id), 'an empty update changes nothing')
  t.equal(same.updated_at, d.updated_at, 'and writes nothing')
  const events = [{ type: 'user.message', content: [{ type: 'text', text: 'again' }] }]
  const env = await s.client.beta.environments.create({ name: 'other' })
  const u = await update(d.id, {
    name: 'renamed',
    description: '',
    metadata: { a: null, c: '3' },
    initial_events: events,
    environment_id: env.id,
    budget: { type: 'limit', max_list_cost: { amount: '100', currency: 'USD' } },
  })
  t.equal(u.name, 'renamed')
  t.equal(u.description, null, '"" clears')
  t.same(u.metadata, { b: '2', c: '3' }, 'metadata is a per-key patch, null deletes')
  t.same(u.initial_events, events, 'initial_events replace whole')
  t.equal(u.environment_id, env.id)
  t.same(u.budget, { type: 'limit', max_list_cost: { amount: '100', currency: 'USD' } })
  t.same(u.schedule?.expression, '* * * * *', 'schedule kept')
  t.ok(u.updated_at > d.updated_at)
  t.same((await update(d.id, { metadata: null })).metadata, { b: '2', c: '3' }, 'metadata: null keeps')
  const cleared = await update(d.id, { budget: null, schedule: null, resources: null, vault_ids: [], description: null })
  t.equal(cleared.budget, null, 'budget: null is no ceiling')
  t.equal(cleared.schedule, null, 'schedule: null removes the schedule')
  t.same(cleared.resources, [])
  t.same(cleared.vault_ids, [])
  const back = await update(d.id, { schedule: { type: 'cron', expression: '0 12 * * *', timezone: 'America/New_York' } })
  t.equal(back.schedule?.timezone, 'America/New_York')
  t.equal(back.schedule?.upcoming_runs_at?.length, 5)
})

t.test('agent: re-pinned by a string to the latest version', async (t) => {
  const { agent, deployment: d } = await deploy(s.client)
  await s.client.beta.agents.update(agent.id, { version: 1, system: 'v2' } as any)
  t.same((await deployments.retrieve(d.id)).agent.version, 1, 'a pin does not move by itself')
  t.same((await update(d.id, { agent: agent.id })).agent, { type: 'agent', id: agent.id, version: 2 })
  t.same((await update(d.id, { agent: { type: 'agent', id: agent.id, version: 1 } })).agent.version, 1)
  const other = await s.client.beta.agents.create({ name: 'o', model: 'claude-sonnet-4-5' })
  await s.client.beta.agents.archive(other.id)
  const r = await failure(update(d.id, { agent: other.id }))
  t.equal(r.status, 400)
  t.equal(r.error.error.details?.error_code, 'agent_archived')
})

t.test('update re-checks what changed with the create rules', async (t) => {
  const { deployment: d } = await deploy(s.client)
  const env = await s.client.beta.environments.create({ name: 'gone' })
  await s.client.beta.environments.archive(env.id)
  const cases: Array<[Record<string, unknown>, number, RegExp]> = [
    [{ environment_id: env.id }, 400, /^environment_id: Environment env_\w+ is archived/],
    [{ environment_id: 'env_01NOSUCHENV00000000000000' }, 404, /^environment_id: /],
    [{ resources: [{ type: 'github_repository', url: 'https://github.com/a/b' }] }, 422, /not supported on deployments/],
    [{ vault_ids: ['vlt_01A'] }, 422, /vault_ids/],
    [{ initial_events: [] }, 400, /initial_events/],
    [{ schedule: { type: 'cron', expression: '* * *', timezone: 'UTC' } }, 400, /schedule\.expression/],
    [{ name: null }, 400, /name/],
    [{ unknown: 1 }, 400, /unknown/],
  ]
  for (const [body, status, message] of cases) {
    const r = await raw(s.url, 'POST', `/v1/deployments/${d.id}`, body)
    t.equal(r.status, status, JSON.stringify(body))
    t.match(r.json.error.message, message)
  }
  const unpriced = await s.client.beta.agents.create({ name: 'u', model: 'no-such-model' })
  const { deployment: u } = await deploy(s.client)
  await update(u.id, { agent: unpriced.id })
  const r = await failure(update(u.id, { budget: { type: 'limit', max_list_cost: { amount: '100', currency: 'USD' } } }))
  t.equal(r.error.error.details?.error_code, 'model_not_budgetable')
  t.same(await deployments.retrieve(d.id), d, 'nothing stored')
})

t.test('pause, unpause, archive', async (t) => {
  const { deployment: d } = await deploy(s.client, { schedule: EVERY_MINUTE })
  const p = await deployments.pause(d.id)
  t.equal(p.status, 'paused')
  t.same(p.paused_reason, { type: 'manual' })
  t.same(await deployments.pause(d.id), p, 'pause is idempotent')
  const u = await deployments.unpause(d.id)
  t.equal(u.status, 'active')
  t.equal(u.paused_reason, null)
  t.ok(Date.parse(u.schedule!.upcoming_runs_at![0]!) > Date.now() - 60_000, 'resumes at the next occurrence')
  t.same(await deployments.unpause(d.id), u, 'unpausing an active deployment changes nothing')
  await deployments.pause(d.id)
  const a = await deployments.archive(d.id)
  t.ok(a.archived_at)
  t.equal(a.status, 'paused', 'archived reports its status as it was')
  t.same(a.schedule?.upcoming_runs_at, [], 'no upcoming runs once archived')
  t.same(await deployments.archive(d.id), a, 'archive is idempotent')
  for (const [what, call] of [
    ['update', () => update(d.id, { name: 'x' })],
    ['unpause', () => deployments.unpause(d.id)],
    ['pause', () => deployments.pause(d.id)],
    ['run', () => deployments.run(d.id)],
  ] as const) {
    const r = await failure(call())
    t.equal(r.status, 409, what)
    t.equal(r.error.error.details?.error_code, 'deployment_archived', what)
    t.equal(r.headers.get('x-should-retry'), 'false')
  }
  t.same(await deployments.retrieve(d.id), a)
})

t.test('list: filters, paging and cursors bound to them', async (t) => {
  const { agent, deployment: a } = await deploy(s.client)
  const b = await deployments.create({ name: 'b', agent: agent.id, environment_id: a.environment_id, initial_events: HELLO } as any)
  const c = await deployments.create({ name: 'c', agent: agent.id, environment_id: a.environment_id, initial_events: HELLO } as any)
  await deployments.pause(b.id)
  await deployments.archive(c.id)
  const ids = async (q: Record<string, unknown>) => {
    const out: string[] = []
    for await (const d of deployments.list(q as any)) out.push(d.id)
    return out
  }
  t.same(await ids({ agent_id: agent.id }), [b.id, a.id], 'newest first, archived left out')
  t.same(await ids({ agent_id: agent.id, include_archived: true }), [c.id, b.id, a.id])
  t.same(await ids({ agent_id: agent.id, status: 'paused' }), [b.id])
  t.same(await ids({ agent_id: agent.id, status: 'active' }), [a.id])
  t.same(await ids({ agent_id: agent.id, 'created_at[gte]': b.created_at, include_archived: true }), [c.id, b.id])
  t.same(await ids({ agent_id: agent.id, 'created_at[lte]': a.created_at }), [a.id])
  t.same(await ids({ agent_id: 'agent_01NOSUCHAGENT0000000000000' }), [])
  t.same(await ids({ agent_id: agent.id, include_archived: true, limit: 1 }), [c.id, b.id, a.id], 'pages of one')
  const first = await raw(s.url, 'GET', `/v1/deployments?agent_id=${agent.id}&limit=1`)
  t.equal(first.json.data.length, 1)
  t.ok(first.json.next_page)
  const other = await raw(s.url, 'GET', `/v1/deployments?agent_id=${agent.id}&limit=1&include_archived=true&page=${first.json.next_page}`)
  t.equal(other.status, 400)
  t.equal(other.json.error.details?.error_code, 'cursor_filter_mismatch')
  for (const q of ['status=archived', 'status=active&include_archived=true', 'limit=0', 'limit=101', 'agent_id=x', 'page=junk', 'created_at[gte]=yesterday']) {
    const r = await raw(s.url, 'GET', `/v1/deployments?${q}`)
    t.equal(r.status, 400, q)
  }
})
