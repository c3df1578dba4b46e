import { createHash } from 'node:crypto'
import { connect } from '@nats-io/transport-node'
import t from 'tap'
import { actorWire } from '../../actors/kit/wire.js'
import { newId } from '../../protocol/ids.js'
import { MemoryStoreKind } from '../../protocol/ops/memory.js'
import { opSubject } from '../../protocol/subjects.js'
import { stack } from '../helpers/stack.js'
import { raw } from '../helpers/troupe.js'
import { failure, isError } from '../sessions/_helpers.js'

/** Memory versions through the official client (WIRE §16): one per create, change and delete; list, get, redact. */
const s = await stack()
const stores = s.client.beta.memoryStores
const memories = stores.memories
const versions = stores.memoryVersions
const sha = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex')
const API = { type: 'api_actor', api_key_id: 'apikey_troupe' }

t.test('created, modified (content, path), deleted: each an immutable version by the api_actor', async (t) => {
  const store = (await stores.create({ name: 'v' })).id
  const m = await memories.create(store, { path: '/v.md', content: 'one' })
  const c = await memories.update(m.id, { memory_store_id: store, content: 'two' })
  const r = await memories.update(m.id, { memory_store_id: store, path: '/w.md' })
  await memories.delete(m.id, { memory_store_id: store })
  const list = (await versions.list(store, { memory_id: m.id })).data
  t.same(
    list.map((v) => [v.operation, v.path, v.content_sha256, v.content_size_bytes]),
    [
      ['deleted', '/w.md', null, null],
      ['modified', '/w.md', sha('two'), 3],
      ['modified', '/v.md', sha('two'), 3],
      ['created', '/v.md', sha('one'), 3],
    ],
    'newest first, after the memory is gone',
  )
  t.same(
    list.slice(1).map((v) => v.id),
    [r.memory_version_id, c.memory_version_id, m.memory_version_id],
    'each version is the one the memory named',
  )
  for (const v of list) {
    t.match(v, { type: 'memory_version', memory_id: m.id, memory_store_id: store, created_by: API, redacted_at: null, redacted_by: null, content: null })
    t.match(v.id, /^memver_/)
  }
  const got = await versions.retrieve(m.memory_version_id, { memory_store_id: store })
  t.equal(got.content, 'one', 'retrieve defaults to full')
  t.equal((await versions.retrieve(m.memory_version_id, { memory_store_id: store, view: 'basic' })).content, null)
  t.equal((await versions.retrieve(list[0]!.id, { memory_store_id: store })).content, null, 'a deleted version has no content')
  const full = (await versions.list(store, { memory_id: m.id, view: 'full' })).data
  t.same(
    full.map((v) => v.content),
    [null, 'two', 'two', 'one'],
  )
  isError(
    t,
    await failure(versions.retrieve('memver_01NOSUCH000000000000000000', { memory_store_id: store })),
    404,
    'not_found_error',
    /Memory version memver_\w+ not found/,
  )
})

t.test('list filters: memory_id, operation, session_id, created_at bounds; paging', async (t) => {
  const store = (await stores.create({ name: 'filters' })).id
  const a = await memories.create(store, { path: '/a', content: 'a' })
  const b = await memories.create(store, { path: '/b', content: 'b' })
  await memories.update(a.id, { memory_store_id: store, content: 'a2' })
  const mid = (await versions.list(store)).data[0]!.created_at
  await memories.delete(b.id, { memory_store_id: store })
  const label = (v: { operation: string; memory_id: string }) => `${v.operation}:${v.memory_id === a.id ? 'a' : 'b'}`
  const ops = async (q: Record<string, unknown>) => (await versions.list(store, q as any)).data.map(label)
  const all = (await versions.list(store)).data
  t.same(all.map(label), ['deleted:b', 'modified:a', 'created:b', 'created:a'])
  t.same(await ops({ memory_id: a.id }), ['modified:a', 'created:a'])
  t.same(await ops({ operation: 'created' }), ['created:b', 'created:a'])
  t.same(await ops({ operation: 'deleted', memory_id: b.id }), ['deleted:b'])
  // Bounds are inclusive, compared with each version's own time (two may share a millisecond).
  t.same(await ops({ 'created_at[lte]': mid }), all.filter((v) => v.created_at <= mid).map(label))
  t.same(await ops({ 'created_at[gte]': mid }), all.filter((v) => v.created_at >= mid).map(label))
  t.ok((await ops({ 'created_at[gte]': mid })).includes('modified:a'), 'the version at the bound itself')
  t.same(await ops({ api_key_id: 'apikey_troupe' }), ['deleted:b', 'modified:a', 'created:b', 'created:a'])
  t.same(await ops({ session_id: 'sesn_01NONE0000000000000000000' }), [])
  const paged: string[] = []
  for await (const v of versions.list(store, { limit: 1 })) paged.push(v.id)
  t.same(
    paged,
    (await versions.list(store)).data.map((v) => v.id),
    'one at a time, each once',
  )
  const bad = async (q: string, field: RegExp) => {
    const r = await raw(s.url, 'GET', `/v1/memory_stores/${store}/memory_versions?${q}`)
    t.equal(r.status, 400, q)
    t.match(r.json?.error?.message, field)
  }
  await bad('operation=renamed', /operation/)
  await bad('memory_id=x', /memory_id/)
  await bad('session_id=x', /session_id/)
  await bad('created_at[gte]=soon', /created_at\[gte\]/)
})

t.test('redact: content and path cleared, the record kept; the current version is refused', async (t) => {
  const store = (await stores.create({ name: 'redact' })).id
  const m = await memories.create(store, { path: '/secret.md', content: 'the password is hunter2' })
  const u = await memories.update(m.id, { memory_store_id: store, content: 'nothing here' })
  isError(
    t,
    await failure(versions.redact(u.memory_version_id, { memory_store_id: store })),
    409,
    'conflict_error',
    /current content/,
    'memory_version_current',
  )
  const red = await versions.redact(m.memory_version_id, { memory_store_id: store })
  t.match(red, {
    id: m.memory_version_id,
    operation: 'created',
    content: null,
    path: null,
    content_sha256: null,
    content_size_bytes: null,
    created_by: API,
    redacted_by: API,
  })
  t.ok(red.redacted_at)
  t.same(await versions.retrieve(m.memory_version_id, { memory_store_id: store }), red, 'kept, redacted')
  t.same(await versions.redact(m.memory_version_id, { memory_store_id: store }), red, 'a second redaction answers it as it is')
  t.equal((await memories.retrieve(m.id, { memory_store_id: store })).content, 'nothing here', 'the memory is untouched')
  t.equal((await versions.list(store)).data.length, 2, 'both versions listed')
  // An archived store's versions can still be redacted; its memories deleted.
  await stores.archive(store)
  await memories.delete(m.id, { memory_store_id: store })
  const redacted = await versions.redact(u.memory_version_id, { memory_store_id: store })
  t.equal(redacted.content, null)
})

t.test("a session's changes: versions by the session_actor, each change on its own (issue 42 point 4's writer)", async (t) => {
  const nc = await connect({ servers: s.nats.url })
  t.teardown(() => nc.close())
  const wire = actorWire(nc)
  const store = (await stores.create({ name: 'session' })).id
  const session = newId('sesn')
  const apply = (changes: unknown[]) =>
    wire.ask<{ results: any[] }>(
      opSubject(MemoryStoreKind.ops['memories.apply'], store),
      { op: 'memories.apply', rid: newId('req'), params: { memory_store_id: store }, query: {}, body: { session_id: session, changes } },
      5000,
    )
  const { results } = await apply([
    { type: 'put', path: '/notes.md', content: 'from the session' },
    { type: 'put', path: '/notes.md/under', content: 'x' },
    { type: 'put', path: '/big', content: 'x'.repeat(102_401) },
    { type: 'put', path: 'relative', content: 'x' },
    { type: 'put', path: '/other.md', content: 'o' },
  ])
  t.match(results, [
    { ok: true, memory: { path: '/notes.md' } },
    { ok: false, code: 'memory_path_conflict' },
    { ok: false, code: 'content_too_large' },
    { ok: false, code: 'invalid_path' },
    { ok: true },
  ])
  const again = await apply([
    { type: 'put', path: '/notes.md', content: 'changed' },
    { type: 'rename', from: '/other.md', to: '/moved.md' },
    { type: 'delete', path: '/notes.md' },
  ])
  t.ok(again.results.every((r) => r.ok))
  const mine = (await versions.list(store, { session_id: session })).data
  t.same(
    mine.map((v) => [v.operation, v.path]),
    [
      ['deleted', '/notes.md'],
      ['modified', '/moved.md'],
      ['modified', '/notes.md'],
      ['created', '/other.md'],
      ['created', '/notes.md'],
    ],
  )
  t.ok(mine.every((v) => v.created_by?.type === 'session_actor' && (v.created_by as any).session_id === session))
  t.same(
    (await memories.list(store)).data.map((m) => m.path),
    ['/moved.md'],
  )
  const index = await wire.ask<{ memories: any[] }>(
    opSubject(MemoryStoreKind.ops['memories.index'], store),
    { op: 'memories.index', rid: newId('req'), params: { memory_store_id: store }, query: {}, body: {} },
    5000,
  )
  t.match(index.memories, [{ path: '/moved.md', content_sha256: sha('o'), content_size_bytes: 1 }])
})
