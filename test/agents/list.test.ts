import t from 'tap'
import { stack } from '../helpers/stack.js'
import { raw } from '../helpers/troupe.js'

const s = await stack()
const agents = s.client.beta.agents
const get = (path: string) => raw(s.url, 'GET', path)
const q = (o: Record<string, string | number | boolean>) => new URLSearchParams(Object.entries(o).map(([k, v]) => [k, String(v)])).toString()

t.test('list: newest first, latest version only, archived hidden by default', async (t) => {
  const made: Array<{ id: string; created_at: string }> = []
  for (let i = 0; i < 5; i++) made.push(await agents.create({ name: `l${i}`, model: 'x' }))
  await agents.update(made[1]!.id, { name: 'l1-v2' })
  await agents.archive(made[0]!.id)
  const range = { 'created_at[gte]': made[0]!.created_at, 'created_at[lte]': made[4]!.created_at }
  const seen: Array<{ id: string; version: number; name: string }> = []
  for await (const a of agents.list({ ...range, limit: 2 })) seen.push({ id: a.id, version: a.version, name: a.name })
  t.same(
    seen.map((a) => a.id),
    [made[4]!.id, made[3]!.id, made[2]!.id, made[1]!.id],
    'newest first, archived hidden',
  )
  t.same(
    seen.find((a) => a.id === made[1]!.id),
    { id: made[1]!.id, version: 2, name: 'l1-v2' },
    'one entry per agent, at its latest version',
  )
  const all: string[] = []
  for await (const a of agents.list({ ...range, include_archived: true, limit: 3 })) all.push(a.id)
  t.same(
    all,
    [...made].reverse().map((a) => a.id),
    'include_archived shows it',
  )
  // Ties on created_at are broken by id, so paging is stable; every page but the last is full.
  const page1 = await get(`/v1/agents?${q({ ...range, limit: 2 })}`)
  t.equal(page1.status, 200)
  t.equal(page1.json.data.length, 2)
  t.type(page1.json.next_page, 'string')
  const page2 = await get(`/v1/agents?${q({ ...range, limit: 2, page: page1.json.next_page })}`)
  t.same(
    page2.json.data.map((a: any) => a.id),
    [made[2]!.id, made[1]!.id],
  )
  t.equal(page2.json.next_page, null, 'no next page when nothing is left')
})

t.test('list: created_at filters', async (t) => {
  const a = await agents.create({ name: 'f0', model: 'x' })
  const b = await agents.create({ name: 'f1', model: 'x' })
  const c = await agents.create({ name: 'f2', model: 'x' })
  const check = async (t: any, query: Record<string, string>) => {
    const gte = query['created_at[gte]'] ?? ''
    const lte = query['created_at[lte]'] ?? '9999'
    const out: Array<{ id: string; created_at: string }> = []
    for await (const x of agents.list({ ...query, limit: 100 })) out.push({ id: x.id, created_at: x.created_at })
    t.ok(
      out.every((x) => x.created_at >= gte && x.created_at <= lte),
      `every result is within ${JSON.stringify(query)}`,
    )
    for (const x of [a, b, c]) {
      t.equal(
        out.some((o) => o.id === x.id),
        x.created_at >= gte && x.created_at <= lte,
        `${x.name} included iff in range`,
      )
    }
  }
  await check(t, { 'created_at[gte]': b.created_at, 'created_at[lte]': c.created_at })
  await check(t, { 'created_at[lte]': a.created_at })
  await check(t, { 'created_at[gte]': c.created_at })
  await check(t, { 'created_at[gte]': b.created_at, 'created_at[lte]': b.created_at })
  const future = await get(`/v1/agents?${q({ 'created_at[gte]': '2999-01-01T00:00:00Z' })}`)
  t.same(future.json, { data: [], next_page: null })
  const bad = await get('/v1/agents?created_at%5Bgte%5D=yesterday')
  t.equal(bad.status, 400)
  t.match(bad.json.error.message, /created_at\[gte\]/)
})

t.test('list: limits and cursors', async (t) => {
  for (let i = 0; i < 3; i++) await agents.create({ name: `c${i}`, model: 'x' })
  const dflt = await get('/v1/agents')
  t.equal(dflt.status, 200)
  t.ok(dflt.json.data.length <= 20)
  const total = (await get('/v1/agents?limit=100')).json.data.length
  t.equal(dflt.json.data.length, Math.min(20, total), 'default limit is 20')
  for (let i = dflt.json.data.length; i < 21; i++) await agents.create({ name: `fill${i}`, model: 'x' })
  t.equal((await get('/v1/agents')).json.data.length, 20, 'default limit is 20')
  t.ok((await get('/v1/agents')).json.next_page, 'more than 20: a next page')
  t.equal((await get('/v1/agents?limit=100')).status, 200)
  for (const bad of ['0', '101', '-1', 'abc', '1.5']) {
    const r = await get(`/v1/agents?limit=${bad}`)
    t.equal(r.status, 400, `limit=${bad}`)
    t.match(r.json.error.message, /limit/)
  }
  t.equal((await get('/v1/agents?include_archived=maybe')).status, 400)
  t.equal((await get('/v1/agents?page=')).status, 200, 'empty page is no cursor')
  const first = await get('/v1/agents?limit=1')
  const cursor = first.json.next_page
  t.equal((await get(`/v1/agents?limit=1&page=${cursor}`)).status, 200)
  t.equal((await get(`/v1/agents?limit=5&page=${cursor}`)).status, 200, 'limit is not a filter')
  for (const other of [
    `include_archived=true&page=${cursor}`,
    `created_at%5Bgte%5D=2000-01-01T00:00:00Z&page=${cursor}`,
    `created_at%5Blte%5D=2999-01-01T00:00:00Z&page=${cursor}`,
  ]) {
    const r = await get(`/v1/agents?limit=1&${other}`)
    t.equal(r.status, 400, other)
    t.equal(r.json.error.type, 'invalid_request_error')
    t.match(r.json.error.message, /different filters/)
  }
  const garbage = await get('/v1/agents?page=garbage')
  t.equal(garbage.status, 400)
  t.match(garbage.json.error.message, /page/)
  const versionsCursor = (await agents.create({ name: 'vc', model: 'x' })).id
  await agents.update(versionsCursor, { name: 'vc2' })
  const vpage = (await get(`/v1/agents/${versionsCursor}/versions?limit=1`)).json.next_page
  t.equal((await get(`/v1/agents?page=${vpage}`)).status, 400, 'a versions cursor is not a list cursor')
})

t.test('versions: ascending, paged by number, cursor bound to the agent', async (t) => {
  const a = await agents.create({ name: 'v1', model: 'x', metadata: { k: '1' } })
  for (let i = 2; i <= 7; i++) await agents.update(a.id, { name: `v${i}` })
  await agents.update(a.id, { metadata: { k: '7' } })
  const all: Array<{ version: number; name: string }> = []
  for await (const v of agents.versions.list(a.id, { limit: 3 })) all.push({ version: v.version, name: v.name })
  t.same(
    all,
    [1, 2, 3, 4, 5, 6, 7].map((n) => ({ version: n, name: `v${n}` })),
  )
  const p1 = await get(`/v1/agents/${a.id}/versions?limit=3`)
  t.same(
    p1.json.data.map((v: any) => v.version),
    [1, 2, 3],
  )
  t.type(p1.json.next_page, 'string')
  const p3 = await get(
    `/v1/agents/${a.id}/versions?limit=3&page=${(await get(`/v1/agents/${a.id}/versions?limit=3&page=${p1.json.next_page}`)).json.next_page}`,
  )
  t.same(
    p3.json.data.map((v: any) => v.version),
    [7],
  )
  t.equal(p3.json.next_page, null)
  const exact = await get(`/v1/agents/${a.id}/versions?limit=7`)
  t.equal(exact.json.data.length, 7)
  t.equal(exact.json.next_page, null, 'no empty trailing page')
  const dflt = await get(`/v1/agents/${a.id}/versions`)
  t.equal(dflt.json.data.length, 7)
  const last = exact.json.data[6]
  t.same(last.metadata, { k: '7' }, 'the latest version carries metadata changes')
  t.same(exact.json.data[0].metadata, { k: '1' }, 'older versions keep the metadata they were written with')
  for (const bad of ['0', '101', 'x']) t.equal((await get(`/v1/agents/${a.id}/versions?limit=${bad}`)).status, 400, `limit=${bad}`)
  const b = await agents.create({ name: 'other', model: 'x' })
  await agents.update(b.id, { name: 'other2' })
  const wrong = await get(`/v1/agents/${b.id}/versions?limit=1&page=${p1.json.next_page}`)
  t.equal(wrong.status, 400, "another agent's cursor")
  await agents.archive(a.id)
  const archived: number[] = []
  for await (const v of agents.versions.list(a.id)) {
    archived.push(v.version)
    t.ok(v.archived_at, 'archived_at on every version')
  }
  t.equal(archived.length, 7, 'archived agents keep their versions readable')
  let many = 0
  const c = await agents.create({ name: 'm0', model: 'x' })
  for (let i = 1; i <= 21; i++) await agents.update(c.id, { name: `m${i}` })
  const d = await get(`/v1/agents/${c.id}/versions`)
  t.equal(d.json.data.length, 20, 'default limit 20')
  for await (const _ of agents.versions.list(c.id, { limit: 100 })) many++
  t.equal(many, 22)
})
