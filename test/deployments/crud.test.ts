import t from 'tap'
import { raw } from '../helpers/troupe.js'
import { HELLO, agentAndEnv, deploymentStack, failure } from './_helpers.js'

// SPEC "Deployments": create and its rules, get, and the bad inputs of each field (issue 24, point 1).

const s = await deploymentStack()
const deployments = s.client.beta.deployments
const { agent, env } = await agentAndEnv(s.client)
const base = { name: 'd', agent: agent.id, environment_id: env.id, initial_events: HELLO }
const create = (body: Record<string, unknown>, opts?: object) => deployments.create({ ...base, ...body } as any, opts)
const post = (body: Record<string, unknown>, headers?: Record<string, string>) => raw(s.url, 'POST', '/v1/deployments', { ...base, ...body }, headers)

t.test('create fills the response form', async (t) => {
  const d = await create({})
  t.match(d.id, /^depl_/)
  t.equal(d.type, 'deployment')
  t.equal(d.name, 'd')
  t.equal(d.description, null)
  t.same(d.agent, { type: 'agent', id: agent.id, version: 1 })
  t.equal(d.environment_id, env.id)
  t.same(d.initial_events, HELLO)
  t.same(d.resources, [])
  t.same(d.vault_ids, [])
  t.same(d.metadata, {})
  t.equal(d.schedule, null)
  t.equal(d.status, 'active')
  t.equal(d.paused_reason, null)
  t.equal(d.budget, null, 'budget is always present')
  t.equal(d.archived_at, null)
  t.equal(d.created_at, d.updated_at)
  t.same(await deployments.retrieve(d.id), d)
  const full = await create({
    description: 'about',
    metadata: { team: 'a' },
    budget: { type: 'limit', max_list_cost: { amount: '500', currency: 'USD' } },
    schedule: { type: 'cron', expression: '0 9 * * 1-5', timezone: 'Europe/Berlin' },
    initial_events: [...HELLO, { type: 'system.message', content: [{ type: 'text', text: 'be brief' }] }],
  })
  t.equal(full.description, 'about')
  t.same(full.metadata, { team: 'a' })
  t.same(full.budget, { type: 'limit', max_list_cost: { amount: '500', currency: 'USD' } })
  t.equal(full.schedule?.expression, '0 9 * * 1-5')
  t.equal(full.schedule?.timezone, 'Europe/Berlin')
  t.equal(full.schedule?.last_run_at, null)
  const upcoming = full.schedule?.upcoming_runs_at ?? []
  t.equal(upcoming.length, 5, 'the next five occurrences')
  for (const u of upcoming) {
    const wall = new Intl.DateTimeFormat('en-GB', { timeZone: 'Europe/Berlin', hour: '2-digit', minute: '2-digit', weekday: 'short' }).format(new Date(u))
    t.match(wall, /^(Mon|Tue|Wed|Thu|Fri) 09:00$/, `${u} is 09:00 on a weekday in Berlin`)
  }
  t.ok(
    upcoming.every((u, i) => i === 0 || u > upcoming[i - 1]!),
    'ascending',
  )
  t.ok(Date.parse(upcoming[0]!) > Date.now() - 1000, 'in the future')
})

t.test('agent: an id pins the latest version, an object pins the version named', async (t) => {
  const a = await s.client.beta.agents.create({ name: 'v', model: 'claude-sonnet-4-5' })
  await s.client.beta.agents.update(a.id, { version: 1, system: 'v2' } as any)
  t.same((await create({ agent: a.id })).agent, { type: 'agent', id: a.id, version: 2 })
  t.same((await create({ agent: { type: 'agent', id: a.id } })).agent, { type: 'agent', id: a.id, version: 2 })
  t.same((await create({ agent: { type: 'agent', id: a.id, version: 1 } })).agent, { type: 'agent', id: a.id, version: 1 })
  const missingVersion = await post({ agent: { type: 'agent', id: a.id, version: 9 } })
  t.equal(missingVersion.status, 404)
  t.match(missingVersion.json.error.message, /^agent: Agent agent_\w+ version 9 not found/)
  const missing = await post({ agent: 'agent_01NOSUCHAGENT0000000000000' })
  t.equal(missing.status, 404)
  t.match(missing.json.error.message, /^agent: /)
  t.equal(missing.json.error.details?.error_code, 'agent_not_found')
  await s.client.beta.agents.archive(a.id)
  const archived = await failure(create({ agent: a.id }))
  t.equal(archived.status, 400)
  t.equal(archived.error.error.details?.error_code, 'agent_archived')
})

t.test('environment_id: exists and is not archived', async (t) => {
  const missing = await post({ environment_id: 'env_01NOSUCHENV00000000000000' })
  t.equal(missing.status, 404)
  t.match(missing.json.error.message, /^environment_id: Environment env_\w+ not found/)
  const e = await s.client.beta.environments.create({ name: 'gone' })
  await s.client.beta.environments.archive(e.id)
  const archived = await post({ environment_id: e.id })
  t.equal(archived.status, 400)
  t.equal(archived.json.error.details?.error_code, 'environment_archived')
  t.match(archived.json.error.message, /^environment_id: /)
})

t.test('resources, vaults, outcomes and budgets get the errors sessions give', async (t) => {
  const cases: Array<[Record<string, unknown>, number, string, RegExp]> = [
    [
      { resources: [{ type: 'github_repository', url: 'https://github.com/a/b' }] },
      422,
      'resource_unsupported',
      /resources\[0\]: github_repository resources are not supported on deployments/,
    ],
    [{ resources: [{ type: 'file', file_id: 'file_01ABC' }] }, 404, 'file_not_found', /^resources\[0\]\.file_id: File file_01ABC not found/],
    [
      {
        resources: [
          { type: 'file', file_id: 'file_01ABC' },
          { type: 'file', file_id: 'file_01ABC' },
        ],
      },
      400,
      'invalid_request',
      /^resources\[1\]\.mount_path: \/mnt\/session\/uploads\/file_01ABC overlaps/,
    ],
    [
      { resources: [{ type: 'memory_store', memory_store_id: 'memstore_01JAAAAAAAAAAAAAAAAAAAAAAA' }] },
      404,
      'memory_store_not_found',
      /^resources\[0\]\.memory_store_id: Memory store memstore_01JAAAAAAAAAAAAAAAAAAAAAAA not found/,
    ],
    [{ vault_ids: ['vlt_01A', 'vlt_01A'] }, 400, 'invalid_request', /vault_ids\[1\]: vlt_01A appears twice/],
    [{ vault_ids: ['vlt_01A'] }, 422, 'vaults_unavailable', /vault_ids: vaults need the operator keyring/],
    [
      {
        initial_events: [
          { type: 'user.define_outcome', description: 'done', rubric: { type: 'text', content: 'ok' } },
          { type: 'user.define_outcome', description: 'again', rubric: { type: 'file', file_id: 'file_01ABC' } },
        ],
      },
      409,
      'outcome_in_progress',
      /^initial_events\[1\]: outcome .* is still being worked on/,
    ],
  ]
  for (const [body, status, code, message] of cases) {
    const r = await post(body)
    t.equal(r.status, status, JSON.stringify(body))
    if (code !== 'invalid_request') t.equal(r.json.error.details?.error_code, code)
    t.match(r.json.error.message, message)
  }
  const unpriced = await s.client.beta.agents.create({ name: 'u', model: 'no-such-model' })
  const r = await post({ agent: unpriced.id, budget: { type: 'limit', max_list_cost: { amount: '100', currency: 'USD' } } })
  t.equal(r.status, 400)
  t.equal(r.json.error.details?.error_code, 'model_not_budgetable')
  t.match(r.json.error.message, /no-such-model/)
})

t.test('bad shapes are 400s naming the field', async (t) => {
  const sys = { type: 'system.message', content: [{ type: 'text', text: 's' }] }
  const cases: Array<[Record<string, unknown>, RegExp]> = [
    [{ name: '' }, /name/],
    [{ name: undefined }, /name/],
    [{ initial_events: [] }, /initial_events/],
    [{ initial_events: Array(51).fill(HELLO[0]) }, /initial_events/],
    [{ initial_events: [sys] }, /initial_events\[0\].*system\.message/],
    [{ initial_events: [...HELLO, sys, sys] }, /initial_events\[2\]/],
    [{ initial_events: [{ type: 'user.interrupt' }] }, /initial_events\[0\]/],
    [{ agent: 'nope' }, /agent/],
    [{ agent: { type: 'agent_with_overrides', id: agent.id } }, /agent/],
    [{ environment_id: 'x' }, /environment_id/],
    [{ schedule: { type: 'cron', expression: '* * * *', timezone: 'UTC' } }, /schedule\.expression/],
    [{ schedule: { type: 'cron', expression: '60 * * * *', timezone: 'UTC' } }, /schedule\.expression.*minute/],
    [{ schedule: { type: 'cron', expression: '0 0 L * *', timezone: 'UTC' } }, /schedule\.expression.*POSIX/],
    [{ schedule: { type: 'cron', expression: '@daily', timezone: 'UTC' } }, /schedule\.expression/],
    [{ schedule: { type: 'cron', expression: '0 0 * * 8', timezone: 'UTC' } }, /schedule\.expression.*day of week/],
    [{ schedule: { type: 'cron', expression: '0 0 * * *', timezone: 'Mars/Olympus' } }, /schedule\.timezone/],
    [{ schedule: { type: 'cron', expression: '0 0 * * *' } }, /schedule\.timezone/],
    [{ budget: { type: 'limit', max_list_cost: { amount: '-1', currency: 'USD' } } }, /budget/],
    [{ metadata: { k: 5 } }, /metadata/],
    [{ extra: 1 }, /extra/],
  ]
  for (const [body, message] of cases) {
    const r = await post(body)
    t.equal(r.status, 400, JSON.stringify(body).slice(0, 100))
    t.match(r.json?.error?.message, message, JSON.stringify(body).slice(0, 100))
  }
})

t.test('Idempotency-Key: a retry gets the same deployment, another body a 422', async (t) => {
  const key = `k-${Date.now()}`
  const a = await post({ name: 'once' }, { 'idempotency-key': key })
  const b = await post({ name: 'once' }, { 'idempotency-key': key })
  t.equal(a.status, 200)
  t.same(b.json, a.json)
  const c = await post({ name: 'other' }, { 'idempotency-key': key })
  t.equal(c.status, 422)
  t.equal(c.json.error.details?.error_code, 'idempotency_key_reused')
})

t.test('unknown ids are 404s', async (t) => {
  const r = await failure(deployments.retrieve('depl_01NOSUCHDEPLOYMENT000000000'))
  t.equal(r.status, 404)
  t.equal(r.error.error.details?.error_code, 'deployment_not_found')
  const run = await failure(s.client.beta.deploymentRuns.retrieve('drun_01NOSUCHRUN00000000000000'))
  t.equal(run.status, 404)
  t.equal(run.error.error.details?.error_code, 'deployment_run_not_found')
  for (const path of ['/v1/deployments/agent_1', '/v1/deployment_runs/depl_1']) t.equal((await raw(s.url, 'GET', path)).status, 404, path)
})
