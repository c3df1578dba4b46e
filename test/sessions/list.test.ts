import t from 'tap'
import { raw } from '../helpers/troupe.js'
import { agentAndEnv, collect, isIdle, sessionStack, until } from './_helpers.js'

// SPEC "Sessions": GET /v1/sessions and its query table; "Endpoints": cursors bound to filters.
// Every test lists its own agent's sessions (agent_id), so sessions of other tests never get in the way.

const s = await sessionStack()
const sessions = s.client.beta.sessions
const agents = s.client.beta.agents

const list = (path: string) => raw(s.url, 'GET', path)
const ids = (page: { data: Array<{ id: string }> }) => page.data.map((x) => x.id)

/** A fresh agent and environment with `n` sessions, returned oldest first. */
async function fixture(n: number) {
  const { agent, env } = await agentAndEnv(s.client)
  const made: any[] = []
  // Sequential: their creation order is their listing order.
  for (let i = 0; i < n; i++) made.push(await sessions.create({ agent: agent.id, environment_id: env.id, title: `s${i}` } as any))
  return { agent, env, made }
}

/** Expected order by (created_at, id): what the list promises for ties too. */
const byCreated = (a: any, b: any) => (a.created_at === b.created_at ? (a.id < b.id ? -1 : 1) : a.created_at < b.created_at ? -1 : 1)

t.test('default order is newest first; order=asc is oldest first', async (t) => {
  const { agent, made } = await fixture(4)
  const asc = [...made].sort(byCreated).map((x) => x.id)
  const page = await sessions.list({ agent_id: agent.id })
  t.same(ids(page), [...asc].reverse(), 'desc by default')
  t.same(ids(await sessions.list({ agent_id: agent.id, order: 'desc' } as any)), [...asc].reverse())
  t.same(ids(await sessions.list({ agent_id: agent.id, order: 'asc' } as any)), asc)
  t.equal(page.next_page, null)
  t.equal(page.prev_page, null)
  const r = await list(`/v1/sessions?agent_id=${agent.id}&order=sideways`)
  t.equal(r.status, 400)
  t.match(r.json?.error?.message, /order/)
})

t.test('the listed session is the session: same fields as GET', async (t) => {
  const { agent, made } = await fixture(1)
  const [listed] = (await sessions.list({ agent_id: agent.id })).data as any[]
  const got: any = await sessions.retrieve(made[0].id)
  const { stats: _a, ...l } = listed
  const { stats: _b, ...g } = got
  t.same(l, g)
})

t.test('limit: 1 to 1000; 0 and 1001 are a 400; the default is 100', async (t) => {
  for (const bad of ['0', '1001', '-1', 'ten', '1.5']) {
    const r = await list(`/v1/sessions?limit=${bad}`)
    t.equal(r.status, 400, `limit=${bad}`)
    t.equal(r.json?.error?.type, 'invalid_request_error')
    t.match(r.json?.error?.message, /limit/)
  }
  t.equal((await list('/v1/sessions?limit=1000')).status, 200, 'limit=1000 is fine')

  const { agent, env } = await agentAndEnv(s.client)
  for (let i = 0; i < 101; i += 10) {
    await Promise.all(Array.from({ length: Math.min(10, 101 - i) }, () => sessions.create({ agent: agent.id, environment_id: env.id } as any)))
  }
  const page = await sessions.list({ agent_id: agent.id })
  t.equal(page.data.length, 100, 'default page size 100')
  t.ok(page.next_page, 'more to come')
  const rest = await sessions.list({ agent_id: agent.id, page: page.next_page! } as any)
  t.equal(rest.data.length, 1)
  t.equal(rest.next_page, null)
  t.equal((await sessions.list({ agent_id: agent.id, limit: 1000 })).data.length, 101)
  t.equal((await sessions.list({ agent_id: agent.id, limit: 1 })).data.length, 1)
})

t.test('statuses[] filters by public status: idle vs running', async (t) => {
  const { agent, made } = await fixture(3)
  const busy = made[1]
  const stream = await sessions.events.stream(busy.id)
  const before = s.model.requests.length
  s.model.enqueue({ hang: true })
  await sessions.events.send(busy.id, { events: [{ type: 'user.message', content: [{ type: 'text', text: 'hang' }] }] } as any)
  await s.model.waitForRequests(before + 1)
  try {
    const running = await until('the running session to be listed as running', async () => {
      const p = await sessions.list({ agent_id: agent.id, statuses: ['running'] } as any)
      return p.data.length > 0 && p
    })
    t.same(ids(running), [busy.id])
    t.equal(running.data[0]!.status, 'running')
    const idle = await sessions.list({ agent_id: agent.id, statuses: ['idle'] } as any)
    t.same(ids(idle).sort(), [made[0].id, made[2].id].sort())
    t.ok(idle.data.every((x) => x.status === 'idle'))
    t.equal((await sessions.list({ agent_id: agent.id, statuses: ['idle', 'running'] } as any)).data.length, 3, 'several statuses: any of them')
    // The repeated-name form is accepted too.
    const r = await list(`/v1/sessions?agent_id=${agent.id}&statuses=idle&statuses=running`)
    t.equal(r.json?.data?.length, 3, 'statuses=a&statuses=b')
    const bad = await list(`/v1/sessions?statuses[]=sleeping`)
    t.equal(bad.status, 400)
    t.match(bad.json?.error?.message, /statuses/)
  } finally {
    await sessions.events.send(busy.id, { events: [{ type: 'user.interrupt' }] } as any)
    await collect(stream, isIdle)
  }
  await until(
    'the interrupted session to be listed as idle',
    async () => (await sessions.list({ agent_id: agent.id, statuses: ['idle'] } as any)).data.length === 3,
  )
  t.pass('idle again after the interrupt')
})

t.test('agent_id and agent_version match the snapshot', async (t) => {
  const { agent, env, made } = await fixture(2)
  await agents.update(agent.id, { version: 1, system: 'v2' } as any)
  const v2 = await sessions.create({ agent: agent.id, environment_id: env.id } as any)
  const other = await agents.create({ name: 'other', model: 'claude-sonnet-4-5' } as any)
  const otherSession = await sessions.create({ agent: other.id, environment_id: env.id } as any)

  t.same(ids(await sessions.list({ agent_id: agent.id, order: 'asc' } as any)), [made[0].id, made[1].id, v2.id])
  t.same(ids(await sessions.list({ agent_id: agent.id, agent_version: 1, order: 'asc' } as any)), [made[0].id, made[1].id])
  t.same(ids(await sessions.list({ agent_id: agent.id, agent_version: 2 } as any)), [v2.id])
  t.same(ids(await sessions.list({ agent_id: agent.id, agent_version: 3 } as any)), [])
  t.same(ids(await sessions.list({ agent_id: other.id })), [otherSession.id])
  t.same(ids(await sessions.list({ agent_id: 'agent_01NOPE0000000000000000000' })), [], 'an unknown agent matches nothing')
})

t.test('agent_version without agent_id is a 400', async (t) => {
  const r = await list('/v1/sessions?agent_version=1')
  t.equal(r.status, 400)
  t.equal(r.json?.error?.type, 'invalid_request_error')
  t.match(r.json?.error?.message, /agent_version.*agent_id/)
  const bad = await list('/v1/sessions?agent_id=agent_x&agent_version=zero')
  t.equal(bad.status, 400)
  t.match(bad.json?.error?.message, /agent_version/)
})

t.test('created_at bounds: gt, gte, lt, lte', async (t) => {
  const { agent, made } = await fixture(5)
  const all = [...made].sort(byCreated)
  const mid = all[2].created_at
  const expect = (keep: (c: string) => boolean) => all.filter((x) => keep(x.created_at)).map((x) => x.id)
  const q = (bounds: Record<string, string>) => sessions.list({ agent_id: agent.id, order: 'asc', ...bounds } as any).then(ids)
  t.same(
    await q({ 'created_at[gte]': mid }),
    expect((c) => c >= mid),
    'gte includes the bound',
  )
  t.same(
    await q({ 'created_at[gt]': mid }),
    expect((c) => c > mid),
    'gt excludes it',
  )
  t.same(
    await q({ 'created_at[lte]': mid }),
    expect((c) => c <= mid),
    'lte includes it',
  )
  t.same(
    await q({ 'created_at[lt]': mid }),
    expect((c) => c < mid),
    'lt excludes it',
  )
  t.same(
    await q({ 'created_at[gte]': all[1].created_at, 'created_at[lte]': all[3].created_at }),
    expect((c) => c >= all[1].created_at && c <= all[3].created_at),
    'a window',
  )
  t.ok((await q({ 'created_at[gte]': mid })).includes(all[2].id))
  t.notOk((await q({ 'created_at[gt]': mid })).includes(all[2].id))
  // An equivalent RFC 3339 spelling with an offset means the same instant.
  const offset = new Date(Date.parse(mid) + 3_600_000).toISOString().replace('Z', '+01:00')
  t.same(
    await q({ 'created_at[gte]': offset }),
    expect((c) => c >= mid),
    'bounds compare instants, not strings',
  )
  const r = await list('/v1/sessions?created_at[gt]=yesterday')
  t.equal(r.status, 400)
  t.match(r.json?.error?.message, /created_at\[gt\]/)
})

t.test('archived sessions are listed only with include_archived=true', async (t) => {
  const { agent, made } = await fixture(3)
  await sessions.archive(made[1].id)
  t.same(ids(await sessions.list({ agent_id: agent.id, order: 'asc' } as any)), [made[0].id, made[2].id], 'hidden by default')
  t.same(ids(await sessions.list({ agent_id: agent.id, order: 'asc', include_archived: false } as any)), [made[0].id, made[2].id])
  const withArchived = await sessions.list({ agent_id: agent.id, order: 'asc', include_archived: true } as any)
  t.same(
    ids(withArchived),
    made.map((x) => x.id),
  )
  const archived: any = withArchived.data[1]
  t.equal(archived.status, 'terminated', 'an archived session reports terminated')
  t.ok(archived.archived_at)
  t.same(ids(await sessions.list({ agent_id: agent.id, include_archived: true, statuses: ['terminated'] } as any)), [made[1].id])
  const r = await list('/v1/sessions?include_archived=maybe')
  t.equal(r.status, 400)
  t.match(r.json?.error?.message, /include_archived/)
})

t.test('deployment_id: directly created sessions belong to no deployment', async (t) => {
  const { agent, made } = await fixture(2)
  t.ok(made.every((x) => x.deployment_id === null))
  t.same(ids(await sessions.list({ agent_id: agent.id, deployment_id: 'depl_01NOPE0000000000000000000' } as any)), [])
  t.same(ids(await sessions.list({ agent_id: agent.id, memory_store_id: 'memstore_01NOPE' } as any)), [], 'memory_store_id: none attached')
})

t.test('next_page walks every session once; prev_page leads back to the previous page', async (t) => {
  const { agent, made } = await fixture(11)
  for (const order of ['desc', 'asc'] as const) {
    const expected = [...made].sort(byCreated).map((x) => x.id)
    if (order === 'desc') expected.reverse()
    const pages: Array<{ data: any[]; next_page: string | null; prev_page: string | null }> = []
    let page = await sessions.list({ agent_id: agent.id, limit: 3, order } as any)
    pages.push(page)
    while (page.next_page) {
      page = await sessions.list({ agent_id: agent.id, limit: 3, order, page: page.next_page } as any)
      pages.push(page)
    }
    t.same(
      pages.map((p) => p.data.length),
      [3, 3, 3, 2],
      `${order}: page sizes`,
    )
    t.same(pages.flatMap(ids), expected, `${order}: all, in order, no duplicates, no gaps`)
    t.equal(pages[0]!.prev_page, null, `${order}: the first page has no prev_page`)
    t.equal(pages[3]!.next_page, null, `${order}: the last page has no next_page`)
    for (let i = 1; i < pages.length; i++) {
      t.ok(pages[i]!.prev_page, `${order}: page ${i} has a prev_page`)
      const back = await sessions.list({ agent_id: agent.id, limit: 3, order, page: pages[i]!.prev_page! } as any)
      t.same(ids(back), ids(pages[i - 1]!), `${order}: prev_page of page ${i} is page ${i - 1}`)
    }
  }
})

t.test('a cursor reused with other filters is a 400', async (t) => {
  const { agent } = await fixture(3)
  const first = await sessions.list({ agent_id: agent.id, limit: 1 })
  t.ok(first.next_page)
  const cursor = encodeURIComponent(first.next_page!)
  const same = await list(`/v1/sessions?agent_id=${agent.id}&limit=2&page=${cursor}`)
  t.equal(same.status, 200, 'a different limit is fine: it is no filter')
  for (const other of [
    `agent_id=${agent.id}&order=asc`,
    `agent_id=${agent.id}&include_archived=true`,
    `agent_id=${agent.id}&statuses[]=idle`,
    '',
    `agent_id=${agent.id}&agent_version=1`,
  ]) {
    const r = await list(`/v1/sessions?${other}&limit=1&page=${cursor}`)
    t.equal(r.status, 400, `page with ${other || 'no filters'}`)
    t.equal(r.json?.error?.type, 'invalid_request_error')
    t.match(r.json?.error?.message, /page/)
  }
  const junk = await list('/v1/sessions?page=not-a-cursor')
  t.equal(junk.status, 400, 'a made-up cursor')
  t.match(junk.json?.error?.message, /page/)
  // Another endpoint's cursor does not work here either: two environments make a first page with a cursor.
  for (const name of ['cursor-a', 'cursor-b']) await s.client.beta.environments.create({ name })
  const envPage = await s.client.beta.environments.list({ limit: 1 } as any)
  t.ok(envPage.next_page, 'the environments list has a next page')
  const r = await list(`/v1/sessions?page=${encodeURIComponent(envPage.next_page!)}`)
  t.equal(r.status, 400, 'an environments cursor')
  t.match(r.json?.error?.message, /page/)
})

t.test('the official client auto-paginates sessions.list()', async (t) => {
  const { agent, made } = await fixture(8)
  const seen: string[] = []
  for await (const x of sessions.list({ agent_id: agent.id, limit: 3 })) seen.push(x.id)
  t.same(
    seen,
    [...made]
      .sort(byCreated)
      .reverse()
      .map((x) => x.id),
  )
  const pages: number[] = []
  for await (const p of (await sessions.list({ agent_id: agent.id, limit: 5, order: 'asc' } as any)).iterPages()) pages.push(p.data.length)
  t.same(pages, [5, 3])
})
