import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import pino from 'pino'
import t from 'tap'
import { type MemoryAccess, type MemoryMount, MemoryMounts } from '../../actors/workdir/memory/index.js'
import { contentSha256 } from '../../protocol/memory-rules.js'
import type { MemoryApplied, MemoryEntry } from '../../protocol/ops/memory.js'
import type { MemoryChange } from '../../protocol/schemas/memory.js'

/**
 * Memory mounts without a server (the whole path through a real store and sandbox: test/memory/sessions.test.ts): a
 * store's memories materialised as files, what a tool changed found and sent as one batch of changes, what the rules
 * refuse said once, links never followed, and a first pass that puts the store's state back over what a directory held.
 */

const SESSION = 'sesn_01MEMMOUNTS'
const log = pino({ level: 'silent' })
const result = { content: [{ type: 'text' as const, text: 'ran' }], is_error: false }

/** A store as its owner answers a mount: paths, contents by version, a token that moves with every write. */
function fakeStore() {
  const memories = new Map<string, { id: string; content: string; version: string }>()
  const contents = new Map<string, string>()
  let writes = 0
  let n = 0
  const applied: MemoryChange[][] = []
  const token = () => `t.${writes}`
  const put = (p: string, content: string) => {
    const version = `memver_${++n}`
    contents.set(version, content)
    const id = memories.get(p)?.id ?? `mem_${n}`
    memories.set(p, { id, content, version })
    writes++
    return { id, type: 'memory', memory_store_id: 's', path: p, content: null, content_sha256: contentSha256(content) } as any
  }
  const access: MemoryAccess = {
    async index(_store, since) {
      if (since === token()) return { token: token() }
      const list: MemoryEntry[] = [...memories].map(([p, m]) => ({
        id: m.id,
        path: p,
        content_sha256: contentSha256(m.content),
        content_size_bytes: Buffer.byteLength(m.content),
        memory_version_id: m.version,
      }))
      return { token: token(), memories: list }
    },
    async apply(_store, _session, changes) {
      applied.push(changes)
      const before = token()
      const results: MemoryApplied[] = changes.map((c) => {
        if (c.type === 'put') return { ok: true, memory: put(c.path, c.content) }
        if (c.type === 'delete') {
          if (memories.delete(c.path)) writes++
          return { ok: true, memory: null }
        }
        const m = memories.get(c.from)
        if (!m) return { ok: false, path: c.to, code: 'not_found', message: 'gone' }
        memories.delete(c.from)
        memories.set(c.to, m)
        writes++
        return { ok: true, memory: { path: c.to, content_sha256: contentSha256(m.content) } as any }
      })
      return { results, before, after: token() }
    },
    async content(_store, version) {
      return contents.get(version)
    },
  }
  return { access, memories, put, applied }
}

function setup(access: MemoryMount['access'] = 'read_write') {
  const root = mkdtempSync(path.join(os.tmpdir(), 'troupe-memory-mounts-'))
  const store = fakeStore()
  const mount: MemoryMount = { store: 'memstore_1', slug: 'notes', access, name: 'Notes' }
  const fresh = () => new MemoryMounts(SESSION, root, store.access, log, null)
  const dir = path.join(root, 'memory', 'notes')
  const at = (rel: string) => path.join(dir, rel)
  return { root, store, mount, fresh, dir, at }
}

t.test('materialised before a tool; changes after it go as one batch; API writes reach the mount', async (t) => {
  const s = setup()
  s.store.put('/a/b.md', 'one')
  s.store.put('/top.md', 'top')
  const m = s.fresh()
  t.equal(await m.ready([s.mount]), undefined)
  t.equal(readFileSync(s.at('a/b.md'), 'utf8'), 'one')
  t.equal(readFileSync(s.at('top.md'), 'utf8'), 'top')

  // A tool: a new file, a changed one, a move, a removal.
  writeFileSync(s.at('new.md'), 'fresh')
  writeFileSync(s.at('a/b.md'), 'two')
  mkdirSync(s.at('moved'))
  writeFileSync(s.at('moved/top.md'), 'top')
  rmSync(s.at('top.md'))
  const after = await m.after([s.mount], result)
  t.same(after, result, 'nothing refused: the result as it was')
  t.equal(s.store.applied.length, 1, 'one batch')
  t.same(s.store.applied[0]!.map((c) => (c.type === 'rename' ? `rename ${c.from} ${c.to}` : `${c.type} ${c.path}`)).sort(), [
    'put /a/b.md',
    'put /new.md',
    'rename /top.md /moved/top.md',
  ])
  t.equal(s.store.memories.get('/a/b.md')!.content, 'two')

  // Nothing changed: no batch; the store untouched by anyone else: no full index either (the token moved with ours).
  await m.after([s.mount], result)
  t.equal(s.store.applied.length, 1)

  // The API writes: the next pass brings it.
  s.store.put('/a/b.md', 'three')
  s.store.memories.delete('/new.md')
  await m.ready([s.mount])
  t.equal(readFileSync(s.at('a/b.md'), 'utf8'), 'three')
  t.notOk(existsSync(s.at('new.md')), 'a memory deleted through the API leaves the mount')
  await m.after([s.mount], result)
  t.equal(s.store.applied.length, 1, 'what the store wrote is not sent back')
})

t.test('what cannot be a memory is said once, and not stored', async (t) => {
  const s = setup()
  const m = s.fresh()
  await m.ready([s.mount])
  writeFileSync(s.at('big.txt'), 'a'.repeat(150_000))
  writeFileSync(s.at('bin.dat'), Buffer.from([0xff, 0xfe, 0x00]))
  writeFileSync(s.at('bad\u0001name'), 'x')
  symlinkSync('/etc/passwd', s.at('link.md'))
  writeFileSync(s.at('ok.md'), 'fine')
  const after = await m.after([s.mount], result)
  const note = after.content.at(-1)!.text
  t.match(note, /big\.txt: not stored: it is 150000 bytes; a memory holds at most 102400/)
  t.match(note, /bin\.dat: not stored: it is not UTF-8 text/)
  t.match(note, /bad.name: not stored: its path must not contain control characters/)
  t.match(note, /link\.md: not stored: a symbolic link/)
  t.same([...s.store.memories.keys()], ['/ok.md'])
  t.same(await m.after([s.mount], result), result, 'said once')
  writeFileSync(s.at('big.txt'), 'small now')
  await m.after([s.mount], result)
  t.equal(s.store.memories.get('/big.txt')?.content, 'small now', 'stored once it fits')
})

t.test('links are never followed: a directory swapped for a link is replaced, not written through', async (t) => {
  const s = setup()
  const outside = mkdtempSync(path.join(os.tmpdir(), 'troupe-outside-'))
  const m = s.fresh()
  await m.ready([s.mount])
  // The agent makes `a` a link to a directory outside; the store then gets /a/x.md through the API.
  symlinkSync(outside, s.at('a'))
  await m.after([s.mount], result)
  s.store.put('/a/x.md', 'inside')
  await m.ready([s.mount])
  t.notOk(existsSync(path.join(outside, 'x.md')), 'nothing written outside the mount')
  t.ok(lstatSync(s.at('a')).isDirectory(), 'the link replaced by a real directory')
  t.equal(readFileSync(s.at('a/x.md'), 'utf8'), 'inside')
})

t.test("a first pass (another activation) puts the store's state back over what the directory held", async (t) => {
  const s = setup()
  s.store.put('/keep.md', 'stored')
  await s.fresh().ready([s.mount])
  // What an earlier activation left and never stored.
  writeFileSync(s.at('keep.md'), 'changed but never stored')
  writeFileSync(s.at('stray.md'), 'never stored')
  const again = s.fresh()
  await again.ready([s.mount])
  t.equal(readFileSync(s.at('keep.md'), 'utf8'), 'stored')
  t.notOk(existsSync(s.at('stray.md')))
  await again.after([s.mount], result)
  t.equal(s.store.applied.length, 0, 'nothing to send after')
})

t.test('a read_only mount: files read-only, nothing sent', async (t) => {
  const s = setup('read_only')
  s.store.put('/r.md', 'read me')
  const m = s.fresh()
  await m.ready([s.mount])
  t.equal(lstatSync(s.at('r.md')).mode & 0o777, 0o444)
  await m.after([s.mount], result)
  t.equal(s.store.applied.length, 0)
})
