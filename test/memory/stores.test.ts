import { jetstreamManager } from '@nats-io/jetstream'
import { connect } from '@nats-io/transport-node'
import t from 'tap'
import { actorWire } from '../../actors/kit/wire.js'
import { newId } from '../../protocol/ids.js'
import { MemoryStoreKind } from '../../protocol/ops/memory.js'
import { opSubject } from '../../protocol/subjects.js'
import { stack } from '../helpers/stack.js'
import { raw } from '../helpers/troupe.js'
import { until } from '../helpers/wait.js'
import { failure, isError } from '../sessions/_helpers.js'

/** Memory stores through the official client (WIRE §16): create, get, list, update, archive, delete, and bad input. */
const s = await stack()
const stores = s.client.beta.memoryStores

t.test('create, get, update, archive, delete', async (t) => {
  const m = await stores.create({ name: 'User Preferences', description: 'Per-user preferences.', metadata: { user: 'u1' } })
  t.match(m.id, /^memstore_/)
  t.same(Object.keys(m).sort(), ['archived_at', 'created_at', 'description', 'id', 'metadata', 'name', 'type', 'updated_at'])
  t.match(m, { type: 'memory_store', name: 'User Preferences', description: 'Per-user preferences.', metadata: { user: 'u1' }, archived_at: null })
  t.same(await stores.retrieve(m.id), m)
  t.equal((await stores.create({ name: 'bare' })).description, '', 'description "" when unset')

  const u = await stores.update(m.id, { name: 'Prefs', metadata: { user: null, team: 't' } })
  t.equal(u.name, 'Prefs')
  t.same(u.metadata, { team: 't' })
  t.equal(u.description, 'Per-user preferences.', 'an absent description is kept')
  t.ok(u.updated_at >= m.updated_at)
  t.same(await stores.update(m.id, {}), u, 'an empty update changes nothing')
  t.same(await stores.update(m.id, { name: null, description: null, metadata: null }), u, 'nulls keep each field')
  t.equal((await stores.update(m.id, { description: '' })).description, '', '"" clears the description')

  const a = await stores.archive(m.id)
  t.ok(a.archived_at)
  t.same(await stores.archive(m.id), a, 'archive again: as it is (irreversible)')
  isError(t, await failure(stores.update(m.id, { name: 'x' })), 409, 'conflict_error', /archived/, 'memory_store_read_only')
  isError(t, await failure(stores.memories.create(m.id, { path: '/x', content: 'x' })), 409, 'conflict_error', /archived/, 'memory_store_read_only')
  t.same(await stores.retrieve(m.id), a, 'still readable')

  t.same(await stores.delete(m.id), { id: m.id, type: 'memory_store_deleted' })
  isError(t, await failure(stores.retrieve(m.id)), 404, 'not_found_error', /Memory store memstore_\w+ not found/, 'memory_store_not_found')
  isError(t, await failure(stores.delete(m.id)), 404, 'not_found_error', /not found/)
  isError(t, await failure(stores.memories.list(m.id)), 404, 'not_found_error', /not found/)
  isError(t, await failure(stores.retrieve('memstore_01NOSUCHSTORE000000000000000')), 404, 'not_found_error', /not found/)
  t.notOk(
    (await stores.list({ include_archived: true })).data.some((x) => x.id === m.id),
    'a deleted store is not listed',
  )
})

t.test('list: newest first, paging, include_archived, created_at bounds', async (t) => {
  const made: Array<{ id: string; created_at: string }> = []
  for (const name of ['l1', 'l2', 'l3']) made.push(await stores.create({ name }))
  const archived = await stores.create({ name: 'l-archived' })
  await stores.archive(archived.id)
  const ids: string[] = []
  for await (const x of stores.list({ limit: 1 })) ids.push(x.id)
  const mine = ids.filter((id) => made.some((m) => m.id === id))
  t.same(mine, made.map((m) => m.id).reverse(), 'newest first, one at a time')
  t.notOk(ids.includes(archived.id), 'archived stores are left out by default')
  t.ok((await stores.list({ include_archived: true, limit: 100 })).data.some((x) => x.id === archived.id))
  // Bounds are inclusive, compared with each store's own time (two may share a millisecond).
  const mineOf = (page: { data: Array<{ id: string }> }) => page.data.map((x) => x.id).filter((id) => made.some((m) => m.id === id))
  const bound = made[1]!.created_at
  const newestFirst = [...made].reverse()
  t.same(
    mineOf(await stores.list({ 'created_at[gte]': bound, limit: 100 })),
    newestFirst.filter((m) => m.created_at >= bound).map((m) => m.id),
    'created_at[gte]',
  )
  t.same(
    mineOf(await stores.list({ 'created_at[lte]': bound, limit: 100 })),
    newestFirst.filter((m) => m.created_at <= bound).map((m) => m.id),
    'created_at[lte]',
  )
  t.ok(mineOf(await stores.list({ 'created_at[lte]': bound, limit: 100 })).includes(made[1]!.id), 'the store at the bound itself')
  const r = await raw(s.url, 'GET', `/v1/memory_stores?limit=1&page=${(await stores.list({ limit: 1 })).next_page}&include_archived=true`)
  t.equal(r.status, 400, 'a cursor with other filters is refused')
})

t.test('bad input: 400 naming the field', async (t) => {
  const bad = async (body: unknown, field: RegExp) => {
    const r = await raw(s.url, 'POST', '/v1/memory_stores', body)
    t.equal(r.status, 400, JSON.stringify(body).slice(0, 80))
    t.match(r.json?.error?.message, field)
  }
  await bad({}, /name/)
  await bad({ name: '' }, /name/)
  await bad({ name: 'x'.repeat(256) }, /name/)
  await bad({ name: 'a\u0007b' }, /name.*control/)
  await bad({ name: 'x', description: 'd'.repeat(1025) }, /description/)
  await bad({ name: 'x', metadata: { k: 1 } }, /metadata/)
  await bad({ name: 'x', metadata: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v'])) }, /metadata/)
  await bad({ name: 'x', extra: 1 }, /extra/)
  const m = await stores.create({ name: 'ok' })
  const up = await raw(s.url, 'POST', `/v1/memory_stores/${m.id}`, { name: '' })
  t.equal(up.status, 400)
  t.match(up.json.error.message, /name/)
  const list = await raw(s.url, 'GET', '/v1/memory_stores?limit=0')
  t.equal(list.status, 400)
  t.match(list.json.error.message, /limit/)
  const ts = await raw(s.url, 'GET', '/v1/memory_stores?created_at[gte]=yesterday')
  t.equal(ts.status, 400)
  t.match(ts.json.error.message, /created_at\[gte\]/)
  t.equal((await raw(s.url, 'GET', '/v1/memory_stores/mem_01X')).status, 404, 'a path id of another kind is a 404')
})

t.test('a store attached to a session that is not deleted cannot be deleted; an archived one cannot be attached', async (t) => {
  const nc = await connect({ servers: s.nats.url })
  t.teardown(() => nc.close())
  const wire = actorWire(nc)
  const ask = (op: 'attach' | 'detach', id: string, session: string) =>
    wire.ask(opSubject(MemoryStoreKind.ops[op], id), { op, rid: newId('req'), params: { memory_store_id: id }, query: {}, body: { session_id: session } }, 5000)
  const m = await stores.create({ name: 'attached' })
  const session = newId('sesn')
  t.equal(((await ask('attach', m.id, session)) as { id: string }).id, m.id)
  await ask('attach', m.id, session)
  isError(t, await failure(stores.delete(m.id)), 409, 'conflict_error', /attached to 1 session/, 'memory_store_in_use')
  t.same(await ask('detach', m.id, session), { attached: 0 })
  t.same(await stores.delete(m.id), { id: m.id, type: 'memory_store_deleted' })
  const archived = await stores.create({ name: 'archived' })
  await stores.archive(archived.id)
  const refused = await failure(ask('attach', archived.id, session))
  t.equal(refused.status, 400)
  t.match(refused.message, /archived and cannot be attached/)
})

t.test("a deleted store's memories and versions are removed from the bucket", async (t) => {
  const m = await stores.create({ name: 'full' })
  for (let i = 0; i < 20; i++) {
    const mem = await stores.memories.create(m.id, { path: `/f/${i}.md`, content: `v1 ${i}` })
    await stores.memories.update(mem.id, { memory_store_id: m.id, content: `v2 ${i}` })
  }
  const nc = await connect({ servers: s.nats.url })
  t.teardown(() => nc.close())
  const jsm = await jetstreamManager(nc)
  const held = async () =>
    Object.values((await jsm.streams.info('KV_troupe_memories', { subjects_filter: `$KV.troupe_memories.${m.id}.>` })).state.subjects ?? {}).filter(
      (n) => n > 0,
    ).length
  t.ok((await held()) >= 60, 'heads, contents and versions stored')
  await stores.delete(m.id)
  await until('its memories gone', async () => (await held()) === 0, 15_000)
  t.equal(await held(), 0)
})
