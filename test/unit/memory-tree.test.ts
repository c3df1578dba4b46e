import t from 'tap'
import { comparePaths, contentSha256, memoryContentProblem, memoryPathProblem, memoryPrefixProblem, memoryStoreSlug } from '../../protocol/memory-rules.js'
import type { Head } from '../../actors/memory/records.js'
import { MemoryTree, type TreeItem } from '../../actors/memory/tree.js'
import { VersionHistory } from '../../actors/memory/history.js'

/** The pure parts of memory stores: the path rules, the path order, a store's tree and its history. */

const head = (id: string, path: string): Head => ({
  revision: 1,
  head: {
    id,
    path,
    created_at: '2026-01-01T00:00:00.000Z',
    updated_at: '2026-01-01T00:00:00.000Z',
    version: {
      id: `memver_${id}`,
      memory_id: id,
      operation: 'created',
      created_at: '2026-01-01T00:00:00.000Z',
      created_by: { type: 'api_actor', api_key_id: 'k' },
      path,
      content_sha256: 'x',
      content_size_bytes: 0,
      redacted_at: null,
      redacted_by: null,
    },
  },
})

t.test('path rules', async (t) => {
  for (const ok of ['/a', '/a/b.md', '/Notes/Ünïcode ok', '/a b/c', `/${'x/'.repeat(19)}y`, '/😀/e'])
    t.equal(memoryPathProblem(ok), undefined, `${ok} is a path`)
  t.match(memoryPathProblem('a/b'), /start with \//)
  t.match(memoryPathProblem('/a//b'), /empty segment/)
  t.match(memoryPathProblem('/a/'), /empty segment/)
  t.match(memoryPathProblem('/'), /empty segment/)
  t.match(memoryPathProblem('/a/../b'), /\. or \.\./)
  t.match(memoryPathProblem('/a/./b'), /\. or \.\./)
  t.match(memoryPathProblem('/a\nb'), /control/)
  t.match(memoryPathProblem('/a\u200bb'), /format/, 'a zero-width space is a format character')
  t.match(memoryPathProblem('/a\u2028b'), /U\+2028/)
  t.match(memoryPathProblem('/e\u0301'), /Normalization Form C/)
  t.equal(memoryPathProblem('/\u00e9'), undefined)
  t.match(memoryPathProblem(`/${'x/'.repeat(20)}y`), /at most 20 segments/)
  t.match(memoryPathProblem(`/${'é'.repeat(512)}`), /at most 1024 bytes/, '512 two-byte characters and the slash pass 1,024 bytes')
  t.equal(memoryPathProblem(`/${'é'.repeat(511)}`), undefined)
  t.match(memoryPathProblem('/a\ud800'), /lone surrogate/)
  t.equal(memoryPrefixProblem('/'), undefined)
  t.equal(memoryPrefixProblem('/a/b/'), undefined)
  t.match(memoryPrefixProblem('/a'), /end with \//)
  t.match(memoryPrefixProblem('/a//'), /empty segment/)
  t.equal(memoryContentProblem('x'.repeat(102_400)), undefined)
  t.match(memoryContentProblem('x'.repeat(102_401)), /at most 102400 bytes/)
  t.match(memoryContentProblem('é'.repeat(51_201)), /was 102402/, 'bytes, not characters')
  t.equal(contentSha256(''), 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855')
  t.equal(memoryStoreSlug('User Preferences!! 2'), 'user-preferences-2')
})

t.test('paths sort by code point (the order of their UTF-8 bytes)', async (t) => {
  const paths = ['/b', '/a/b', '/a-b', '/a', '/\uffff', '/😀', '/A']
  const sorted = [...paths].sort(comparePaths)
  t.same(sorted, ['/A', '/a', '/a-b', '/a/b', '/b', '/\uffff', '/😀'])
  t.same(
    sorted.map((p) => Buffer.from(p)),
    [...paths].map((p) => Buffer.from(p)).sort(Buffer.compare),
  )
})

const ids = (items: TreeItem[]) => items.map((i) => (i.kind === 'prefix' ? `P${i.path}` : i.head.head.path))

t.test('a tree: conflicts, depth listings and paging', async (t) => {
  const tree = new MemoryTree(['/notes/a.md', '/notes/b/c.md', '/notes/b/d/e.md', '/notes-x', '/top', '/z/y/x'].map((p, i) => head(`mem_${i}`, p)))
  t.equal(tree.conflict('/notes/a.md')?.head.id, 'mem_0', 'the same path')
  t.equal(tree.conflict('/notes/a.md', 'mem_0'), undefined, 'its own path')
  t.equal(tree.conflict('/top/under')?.head.path, '/top', 'an ancestor')
  t.equal(tree.conflict('/notes/b')?.head.path, '/notes/b/c.md', 'a descendant')
  t.equal(tree.conflict('/notes/bb'), undefined)
  t.equal(tree.conflict('/Notes/a.md'), undefined, 'case-sensitive')
  t.same(ids(tree.page('/', 0, undefined, 100).items), ['/notes-x', '/notes/a.md', '/notes/b/c.md', '/notes/b/d/e.md', '/top', '/z/y/x'])
  t.same(ids(tree.page('/', 1, undefined, 100).items), ['/notes-x', 'P/notes/', '/top', 'P/z/'])
  t.same(ids(tree.page('/notes/', 1, undefined, 100).items), ['/notes/a.md', 'P/notes/b/'])
  t.same(ids(tree.page('/notes/', 2, undefined, 100).items), ['/notes/a.md', '/notes/b/c.md', 'P/notes/b/d/'])
  t.same(ids(tree.page('/notes/b/', 0, undefined, 100).items), ['/notes/b/c.md', '/notes/b/d/e.md'])
  t.same(ids(tree.page('/nothing/', 0, undefined, 100).items), [])
  // Paging one item at a time, depth 1 from the root.
  const seen: string[] = []
  let after: { p: string; k: 0 | 1 } | undefined
  for (;;) {
    const { items, more } = tree.page('/', 1, after, 1)
    seen.push(...ids(items))
    if (!more) break
    const last = items[0]!
    after = last.kind === 'prefix' ? { p: last.path, k: 1 } : { p: last.head.head.path, k: 0 }
  }
  t.same(seen, ['/notes-x', 'P/notes/', '/top', 'P/z/'])
  // Renames and removals keep the order.
  tree.put({ ...head('mem_4', '/a/top'), revision: 2 })
  tree.remove('mem_3')
  t.same(ids(tree.page('/', 1, undefined, 100).items), ['P/a/', 'P/notes/', 'P/z/'])
  t.equal(tree.atPath('/top'), undefined)
  t.equal(tree.atPath('/a/top')?.head.id, 'mem_4')
  t.equal(tree.size, 5)
})

t.test('a history: newest first, filters, paging', async (t) => {
  const v = (id: string, at: string, memory = 'mem_1', by = 'sesn_1') => ({
    ...head(memory, '/x').head.version,
    id,
    created_at: at,
    memory_id: memory,
    created_by: { type: 'session_actor' as const, session_id: by },
  })
  const h = new VersionHistory([
    v('memver_2', '2026-01-02T00:00:00.000Z'),
    v('memver_1', '2026-01-01T00:00:00.000Z', 'mem_2'),
    v('memver_2', '2026-01-02T00:00:00.000Z'),
  ])
  h.put(v('memver_3', '2026-01-03T00:00:00.000Z', 'mem_1', 'sesn_2'))
  t.same(
    h.page({}, undefined, 10).items.map((x) => x.id),
    ['memver_3', 'memver_2', 'memver_1'],
  )
  t.same(
    h.page({ memory_id: 'mem_1' }, undefined, 10).items.map((x) => x.id),
    ['memver_3', 'memver_2'],
  )
  t.same(
    h.page({ session_id: 'sesn_2' }, undefined, 10).items.map((x) => x.id),
    ['memver_3'],
  )
  t.same(
    h.page({ lte: Date.parse('2026-01-02T00:00:00.000Z') }, undefined, 10).items.map((x) => x.id),
    ['memver_2', 'memver_1'],
  )
  const first = h.page({}, undefined, 2)
  t.equal(first.more, true)
  t.same(
    h.page({}, first.items[1], 2).items.map((x) => x.id),
    ['memver_1'],
  )
})
