import t from 'tap'
import { stack } from '../helpers/stack.js'
import { raw } from '../helpers/troupe.js'

const s = await stack()
const envs = s.client.beta.environments

t.test('create applies defaults', async (t) => {
  const e = await envs.create({ name: 'defaults' })
  t.match(e.id, /^env_/)
  t.equal(e.type, 'environment')
  t.same(e.config, {
    type: 'cloud',
    networking: { type: 'unrestricted' },
    packages: { type: 'packages', apt: [], cargo: [], gem: [], go: [], npm: [], pip: [] },
  })
  t.equal(e.description, null)
  t.same(e.metadata, {})
  t.equal(e.archived_at, null)
  t.notOk('scope' in e)
})

t.test('self_hosted carries scope in config and top level', async (t) => {
  const a = await envs.create({ name: 'sh', config: { type: 'self_hosted' } })
  t.same(a.config, { type: 'self_hosted', scope: 'organization' })
  t.equal((a as any).scope, 'organization')
  const b = (await raw(s.url, 'POST', '/v1/environments', { name: 'sh2', config: { type: 'self_hosted', scope: 'account' } })).json
  t.equal(b.config.scope, 'account')
  t.equal(b.scope, 'account')
  const c = await envs.create({ name: 'sh3', config: { type: 'self_hosted' }, scope: 'account' })
  t.equal(c.config.type === 'self_hosted' && (c.config as any).scope, 'account')
})

t.test('scope is rejected for cloud', async (t) => {
  for (const body of [
    { name: 'x', scope: 'account' },
    { name: 'x', config: { type: 'cloud', scope: 'account' } },
  ]) {
    const r = await raw(s.url, 'POST', '/v1/environments', body)
    t.equal(r.status, 400)
    t.match(r.json.error.message, /scope/)
  }
})

t.test('limited networking validation', async (t) => {
  const ok = await envs.create({
    name: 'lim',
    config: { type: 'cloud', networking: { type: 'limited', allowed_hosts: ['example.com', '*.pypi.org'] } },
  })
  t.same(ok.config.type === 'cloud' && ok.config.networking, {
    type: 'limited',
    allowed_hosts: ['example.com', '*.pypi.org'],
    allow_mcp_servers: false,
    allow_package_managers: false,
  })
  const bad: Array<[string, RegExp]> = [
    ['https://example.com', /scheme/],
    ['example.com:443', /port/],
    ['example.com/path', /path/],
    ['foo.*.com', /wildcard/],
    ['*example.com', /wildcard/],
    ['exa mple.com', /hostname/],
  ]
  for (const [host, rule] of bad) {
    const r = await raw(s.url, 'POST', '/v1/environments', {
      name: 'bad',
      config: { type: 'cloud', networking: { type: 'limited', allowed_hosts: [host] } },
    })
    t.equal(r.status, 400, host)
    t.match(r.json.error.message, /allowed_hosts\[0\]/, host)
    t.match(r.json.error.message, rule, host)
  }
})

t.test('update rules', async (t) => {
  const e = await envs.create({
    name: 'upd',
    metadata: { a: '1', b: '2', c: '3' },
    config: { type: 'cloud', networking: { type: 'limited', allowed_hosts: ['a.com'], allow_mcp_servers: true }, packages: { pip: ['requests'] } },
  })
  const u = await envs.update(e.id, { metadata: { a: null, b: '', d: '4' } as any, description: 'desc' })
  t.same(u.metadata, { c: '3', d: '4' }, 'null and "" delete, strings upsert')
  t.equal(u.description, 'desc')
  t.same(u.config, e.config, 'omitted config keeps')
  const u2 = await envs.update(e.id, { config: { type: 'cloud', networking: { type: 'limited', allow_package_managers: true } } })
  t.same(
    u2.config.type === 'cloud' && u2.config.networking,
    {
      type: 'limited',
      allowed_hosts: ['a.com'],
      allow_mcp_servers: true,
      allow_package_managers: true,
    },
    'per-field merge inside limited',
  )
  t.same(u2.config.type === 'cloud' && u2.config.packages.pip, ['requests'], 'omitted packages keep')
  const sh = await envs.create({ name: 'sh', config: { type: 'self_hosted' }, scope: 'account' })
  const toCloud = await envs.update(sh.id, { config: { type: 'cloud' } })
  t.equal(toCloud.config.type, 'cloud')
  t.notOk('scope' in toCloud, 'self_hosted → cloud clears scope')
  t.notOk('scope' in toCloud.config)
})

t.test('archive, delete', async (t) => {
  const e = await envs.create({ name: 'arch' })
  const a1 = await envs.archive(e.id)
  t.ok(a1.archived_at)
  const a2 = await envs.archive(e.id)
  t.equal(a2.archived_at, a1.archived_at, 'idempotent')
  const r = await raw(s.url, 'POST', `/v1/environments/${e.id}`, { name: 'new' })
  t.equal(r.status, 400)
  t.equal(r.json.error.details.error_code, 'environment_archived')
  const d = await envs.delete(e.id)
  t.same(d, { id: e.id, type: 'environment_deleted' })
  const g = await raw(s.url, 'GET', `/v1/environments/${e.id}`)
  t.equal(g.status, 404)
})

t.test('list pages newest first and hides archived', async (t) => {
  const made: string[] = []
  for (let i = 0; i < 5; i++) made.push((await envs.create({ name: `page-${i}` })).id)
  await envs.archive(made[0]!)
  const first = await raw(s.url, 'GET', '/v1/environments?limit=2')
  t.equal(first.json.data.length, 2)
  t.ok(first.json.next_page)
  const all: string[] = []
  for await (const e of envs.list({ limit: 2 })) all.push(e.id)
  t.notOk(all.includes(made[0]!), 'archived hidden')
  const withArchived: string[] = []
  for await (const e of envs.list({ limit: 3, include_archived: true })) withArchived.push(e.id)
  t.ok(withArchived.includes(made[0]!))
  t.same(withArchived.indexOf(made[4]!) < withArchived.indexOf(made[3]!), true, 'newest first')
  const mismatch = await raw(s.url, 'GET', `/v1/environments?limit=2&include_archived=true&page=${first.json.next_page}`)
  t.equal(mismatch.status, 400, 'cursor bound to filters')
  t.equal((await raw(s.url, 'GET', '/v1/environments?limit=1001')).status, 400)
  t.equal((await raw(s.url, 'GET', '/v1/environments?page=')).status, 200, 'empty page is no cursor')
})

t.test('a keyed create after the environment its key made was deleted makes it again (the id is free once more)', async (t) => {
  const keyed = { headers: { 'Idempotency-Key': `env-again-${Date.now()}` } }
  const first = await envs.create({ name: 'again' }, keyed)
  t.same((await envs.create({ name: 'again' }, keyed)).id, first.id, 'a retry answers what it made')
  await envs.delete(first.id)
  const again = await envs.create({ name: 'again' }, keyed)
  t.equal(again.id, first.id, 'the key names the same id')
  t.equal((await envs.retrieve(again.id)).name, 'again', 'stored again')
})
