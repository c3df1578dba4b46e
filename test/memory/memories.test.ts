import { createHash } from 'node:crypto'
import t from 'tap'
import { stack } from '../helpers/stack.js'
import { raw } from '../helpers/troupe.js'
import { failure, isError } from '../sessions/_helpers.js'

/** Memories through the official client (WIRE §16): paths, content, listing by folder, views, paging and the 409s. */
const s = await stack()
const stores = s.client.beta.memoryStores
const memories = stores.memories
const sha = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex')
const newStore = async (name = 'm') => (await stores.create({ name })).id

t.test('create, get, update, delete', async (t) => {
  const store = await newStore()
  const m = await memories.create(store, { path: '/projects/foo/notes.md', content: 'hello' })
  t.match(m.id, /^mem_/)
  t.match(m.memory_version_id, /^memver_/)
  t.same(Object.keys(m).sort(), [
    'content',
    'content_sha256',
    'content_size_bytes',
    'created_at',
    'id',
    'memory_store_id',
    'memory_version_id',
    'path',
    'type',
    'updated_at',
  ])
  t.match(m, { type: 'memory', memory_store_id: store, path: '/projects/foo/notes.md', content: null, content_sha256: sha('hello'), content_size_bytes: 5 })
  t.equal((await memories.create(store, { path: '/full.md', content: 'x', view: 'full' })).content, 'x', 'view=full on create returns the content')
  const got = await memories.retrieve(m.id, { memory_store_id: store })
  t.equal(got.content, 'hello', 'retrieve defaults to full')
  t.equal((await memories.retrieve(m.id, { memory_store_id: store, view: 'basic' })).content, null)

  const u = await memories.update(m.id, { memory_store_id: store, content: 'héllo wörld' })
  t.equal(u.content, null, 'update defaults to basic')
  t.equal(u.content_sha256, sha('héllo wörld'))
  t.equal(u.content_size_bytes, Buffer.byteLength('héllo wörld'))
  t.not(u.memory_version_id, m.memory_version_id, 'a new version')
  t.equal(u.created_at, m.created_at)
  const same = await memories.update(m.id, { memory_store_id: store, content: 'héllo wörld' })
  t.equal(same.memory_version_id, u.memory_version_id, 'nothing changed: no new version')

  const moved = await memories.update(m.id, { memory_store_id: store, path: '/archive/notes.md', view: 'full' })
  t.equal(moved.id, m.id, 'a rename keeps the id')
  t.equal(moved.path, '/archive/notes.md')
  t.equal(moved.content, 'héllo wörld', 'and the content')
  t.equal((await memories.create(store, { path: '/projects/foo/notes.md', content: 'reused' })).path, '/projects/foo/notes.md', 'the old path is free')

  const empty = await memories.create(store, { path: '/empty', content: '' })
  t.equal(empty.content_sha256, sha(''))
  t.equal((await memories.create(store, { path: '/null', content: null })).content_size_bytes, 0, 'null content is empty')

  t.same(await memories.delete(m.id, { memory_store_id: store }), { id: m.id, type: 'memory_deleted' })
  isError(t, await failure(memories.retrieve(m.id, { memory_store_id: store })), 404, 'not_found_error', /Memory mem_\w+ not found/, 'memory_not_found')
  isError(t, await failure(memories.delete(m.id, { memory_store_id: store })), 404, 'not_found_error', /not found/)
  isError(t, await failure(memories.update(m.id, { memory_store_id: store, content: 'x' })), 404, 'not_found_error', /not found/)
  const other = await newStore('other')
  isError(t, await failure(memories.retrieve(empty.id, { memory_store_id: other })), 404, 'not_found_error', /not found in memory store/)
})

t.test('path rules: 400 naming path, before anything is stored', async (t) => {
  const store = await newStore()
  const bad = async (path: unknown, why: RegExp) => {
    const r = await raw(s.url, 'POST', `/v1/memory_stores/${store}/memories`, { path, content: 'x' })
    t.equal(r.status, 400, `${JSON.stringify(path)?.slice(0, 60)}: ${r.json?.error?.message}`)
    t.match(r.json?.error?.message, /^path/)
    t.match(r.json?.error?.message, why)
  }
  await bad('notes.md', /start with \//)
  await bad('/a//b', /empty segment/)
  await bad('/a/', /empty segment/)
  await bad('/', /empty segment/)
  await bad('/a/../b', /\. or \.\./)
  await bad('/a\tb', /control/)
  await bad('/a\u200eb', /format/)
  await bad('/e\u0301', /Normalization Form C/)
  await bad(`/${'s/'.repeat(20)}x`, /20 segments/)
  await bad(`/${'x'.repeat(1024)}`, /1024 bytes/)
  await bad(42, /string/)
  const missing = await raw(s.url, 'POST', `/v1/memory_stores/${store}/memories`, { content: 'x' })
  t.equal(missing.status, 400)
  t.match(missing.json.error.message, /path/)
  const rename = await raw(s.url, 'POST', `/v1/memory_stores/${store}/memories/mem_01NOSUCH0000000000000000000`, { path: 'x' })
  t.equal(rename.status, 400, 'an update is checked before the memory is looked up')
  t.match(rename.json.error.message, /^path/)
  t.same((await memories.list(store)).data, [], 'nothing stored')
  // Case-sensitive, NFC and unicode paths are stored as given.
  const upper = await memories.create(store, { path: '/Notes/Café ☕/😀.md', content: 'x' })
  const lower = await memories.create(store, { path: '/notes/café ☕/😀.md', content: 'x' })
  t.not(upper.id, lower.id, 'paths are case-sensitive')
  t.equal((await memories.retrieve(upper.id, { memory_store_id: store })).path, '/Notes/Café ☕/😀.md')
  t.equal((await memories.create(store, { path: `/${'s/'.repeat(19)}x`, content: '' })).path.split('/').length, 21, '20 segments')
  t.equal((await memories.create(store, { path: `/${'é'.repeat(511)}`, content: '' })).path.length, 512, '1,023 bytes')
})

t.test('content: at most 100 kB of UTF-8', async (t) => {
  const store = await newStore()
  const max = await memories.create(store, { path: '/max', content: 'x'.repeat(102_400) })
  t.equal(max.content_size_bytes, 102_400)
  const over = await raw(s.url, 'POST', `/v1/memory_stores/${store}/memories`, { path: '/over', content: 'x'.repeat(102_401) })
  t.equal(over.status, 400)
  t.match(over.json.error.message, /^content.*102400 bytes/)
  const wide = await raw(s.url, 'POST', `/v1/memory_stores/${store}/memories`, { path: '/wide', content: 'é'.repeat(51_201) })
  t.equal(wide.status, 400, 'counted in bytes')
  const up = await raw(s.url, 'POST', `/v1/memory_stores/${store}/memories/${max.id}`, { content: 'y'.repeat(102_401) })
  t.equal(up.status, 400)
  t.match(up.json.error.message, /^content/)
  t.equal((await memories.retrieve(max.id, { memory_store_id: store })).content_sha256, sha('x'.repeat(102_400)), 'unchanged')
  const lone = await raw(s.url, 'POST', `/v1/memory_stores/${store}/memories`, '{"path":"/lone","content":"a\\ud800b"}')
  t.equal(lone.status, 400, 'a lone surrogate has no UTF-8 bytes to hash')
  t.match(lone.json.error.message, /^content/)
})

t.test('409 memory_path_conflict_error: the same path, an ancestor or a descendant; nothing stored', async (t) => {
  const store = await newStore()
  const notes = await memories.create(store, { path: '/notes', content: 'file' })
  const deep = await memories.create(store, { path: '/a/b/c.md', content: 'x' })
  const conflict = async (p: Promise<unknown>, path: string, memory: string) => {
    const e = await failure(p)
    isError(t, e, 409, 'memory_path_conflict_error', /^path: /)
    t.equal(e.error.error.conflicting_path, path)
    t.equal(e.error.error.conflicting_memory_id, memory)
    t.equal(e.headers.get('x-should-retry'), 'false')
  }
  await conflict(memories.create(store, { path: '/notes', content: 'again' }), '/notes', notes.id)
  await conflict(memories.create(store, { path: '/notes/todo.md', content: 'x' }), '/notes', notes.id)
  await conflict(memories.create(store, { path: '/a/b', content: 'x' }), '/a/b/c.md', deep.id)
  await conflict(memories.create(store, { path: '/a', content: 'x' }), '/a/b/c.md', deep.id)
  await conflict(memories.update(notes.id, { memory_store_id: store, path: '/a/b/c.md/d' }), '/a/b/c.md', deep.id)
  t.equal((await memories.create(store, { path: '/a/b/d.md', content: 'x' })).path, '/a/b/d.md', 'a sibling is fine')
  t.equal((await memories.update(deep.id, { memory_store_id: store, path: '/a/b/c.md/inner' })).path, '/a/b/c.md/inner', 'under its own old path')
  const listed = (await memories.list(store)).data.map((m) => m.path)
  t.same(listed, ['/a/b/c.md/inner', '/a/b/d.md', '/notes'], 'nothing else was stored')
})

t.test('409 memory_precondition_failed_error: nothing changed', async (t) => {
  const store = await newStore()
  const m = await memories.create(store, { path: '/p.md', content: 'one' })
  const e = await failure(
    memories.update(m.id, { memory_store_id: store, content: 'two', precondition: { type: 'content_sha256', content_sha256: sha('other') } }),
  )
  isError(t, e, 409, 'memory_precondition_failed_error', /precondition\.content_sha256/)
  t.equal(e.headers.get('x-should-retry'), 'false')
  const renamed = await failure(
    memories.update(m.id, { memory_store_id: store, path: '/q.md', precondition: { type: 'content_sha256', content_sha256: sha('x') } }),
  )
  isError(t, renamed, 409, 'memory_precondition_failed_error', /precondition/)
  const after = await memories.retrieve(m.id, { memory_store_id: store })
  t.match(after, { path: '/p.md', content: 'one', memory_version_id: m.memory_version_id }, 'nothing changed')
  const ok = await memories.update(m.id, { memory_store_id: store, content: 'two', precondition: { type: 'content_sha256', content_sha256: sha('one') } })
  t.equal(ok.content_sha256, sha('two'))
  const already = await memories.update(m.id, {
    memory_store_id: store,
    content: 'two',
    precondition: { type: 'content_sha256', content_sha256: sha('stale') },
  })
  t.equal(already.memory_version_id, ok.memory_version_id, 'exactly the requested content already: succeeds, no version')
  const del = await failure(memories.delete(m.id, { memory_store_id: store, expected_content_sha256: sha('one') }))
  isError(t, del, 409, 'memory_precondition_failed_error', /expected_content_sha256/)
  t.equal((await memories.retrieve(m.id, { memory_store_id: store })).content, 'two', 'not deleted')
  t.same(await memories.delete(m.id, { memory_store_id: store, expected_content_sha256: sha('two') }), { id: m.id, type: 'memory_deleted' })
  const badHash = await raw(s.url, 'POST', `/v1/memory_stores/${store}/memories/${m.id}`, {
    content: 'x',
    precondition: { type: 'content_sha256', content_sha256: 'ABC' },
  })
  t.equal(badHash.status, 400)
  t.match(badHash.json.error.message, /precondition\.content_sha256/)
  const badType = await raw(s.url, 'POST', `/v1/memory_stores/${store}/memories/${m.id}`, { content: 'x', precondition: { type: 'etag' } })
  t.equal(badType.status, 400)
  t.match(badType.json.error.message, /precondition\.type/)
})

t.test('listing: path order, path_prefix, depth with memory_prefix entries, views, paging', async (t) => {
  const store = await newStore()
  const paths = ['/b.md', '/a/x.md', '/a/y/z.md', '/a/y/w/v.md', '/a-b.md', '/c/d/e/f.md', '/Z.md']
  for (const [i, path] of paths.entries()) await memories.create(store, { path, content: `c${i}` })
  const all = (await memories.list(store, { limit: 100 })).data
  t.same(
    all.map((m) => m.path),
    ['/Z.md', '/a-b.md', '/a/x.md', '/a/y/w/v.md', '/a/y/z.md', '/b.md', '/c/d/e/f.md'],
    'depth 0 (default): every memory, in path order',
  )
  t.ok(
    all.every((m) => m.type === 'memory' && m.content === null),
    'basic by default: no content',
  )
  const top = (await memories.list(store, { depth: 1 })).data
  t.same(
    top.map((m) => [m.type, m.path]),
    [
      ['memory', '/Z.md'],
      ['memory', '/a-b.md'],
      ['memory_prefix', '/a/'],
      ['memory', '/b.md'],
      ['memory_prefix', '/c/'],
    ],
    'depth 1: children, deeper folders as memory_prefix entries',
  )
  t.same(
    (await memories.list(store, { path_prefix: '/a/', depth: 1 })).data.map((m) => [m.type, m.path]),
    [
      ['memory', '/a/x.md'],
      ['memory_prefix', '/a/y/'],
    ],
  )
  t.same(
    (await memories.list(store, { path_prefix: '/a/' })).data.map((m) => m.path),
    ['/a/x.md', '/a/y/w/v.md', '/a/y/z.md'],
    'a prefix matches whole segments: /a-b.md is not under /a/',
  )
  t.same((await memories.list(store, { path_prefix: '/nothing/' })).data, [])
  const full = (await memories.list(store, { path_prefix: '/a/', view: 'full' })).data as any[]
  t.same(
    full.map((m) => m.content),
    ['c1', 'c3', 'c2'],
    'full: with content',
  )
  // Paging in path order, one at a time, depth 1, through the client's iterator.
  const paged: string[] = []
  for await (const m of memories.list(store, { depth: 1, limit: 1 })) paged.push(`${m.type}:${m.path}`)
  t.same(
    paged,
    top.map((m) => `${m.type}:${m.path}`),
  )
  const bad = async (q: string, field: RegExp) => {
    const r = await raw(s.url, 'GET', `/v1/memory_stores/${store}/memories?${q}`)
    t.equal(r.status, 400, q)
    t.match(r.json?.error?.message, field)
  }
  await bad('path_prefix=/a', /path_prefix.*end with \//)
  await bad('path_prefix=a/', /path_prefix/)
  await bad('depth=-1', /depth/)
  await bad('depth=x', /depth/)
  await bad('view=everything', /view/)
  await bad('limit=101', /limit/)
  await bad(`page=${(await memories.list(store, { limit: 1 })).next_page}&depth=1&limit=1`, /page/)
})

t.test('view=full caps a page at 20', async (t) => {
  const store = await newStore()
  for (let i = 0; i < 45; i++) await memories.create(store, { path: `/n/${String(i).padStart(2, '0')}`, content: `#${i}` })
  const basic = await memories.list(store, { limit: 100 })
  t.equal(basic.data.length, 45)
  const first = await memories.list(store, { limit: 100, view: 'full' })
  t.equal(first.data.length, 20, 'full: 20 at most')
  t.ok(first.next_page)
  const seen: string[] = []
  for await (const m of memories.list(store, { limit: 100, view: 'full' })) seen.push((m as any).content)
  t.same(
    seen,
    Array.from({ length: 45 }, (_, i) => `#${i}`),
    'every memory once, in path order, across pages',
  )
})
