import t from 'tap'
import { type MemoryData, type MemWrite, sha256, type VersionRead } from '../chaos/memories.js'
import { memoryProblems } from '../chaos/memory-checks.js'

/** The chaos run's memory checks (test/chaos/memory-checks.ts) find what they are for, and nothing in a sound history. */

const api = { type: 'api_actor' }
const write = (tag: string, o: Partial<MemWrite> = {}): MemWrite => ({
  kind: 'api-update',
  store: 'memstore_1',
  path: '/a.md',
  memoryId: 'mem_1',
  tag,
  sha: sha256(tag),
  outcome: 'acknowledged',
  at: 0,
  ...o,
})
let n = 0
/** A version of `tag`'s content; list them newest first, as the API does. */
const version = (tag: string, o: Partial<VersionRead> = {}): VersionRead => ({
  store: 'memstore_1',
  id: `memver_${String(++n).padStart(3, '0')}`,
  memory_id: 'mem_1',
  operation: 'modified',
  sha: sha256(tag),
  created_at: `2026-01-01T00:00:00.${String(n).padStart(3, '0')}Z`,
  created_by: api,
  path: '/a.md',
  ...o,
})

/** A sound run: a seed, an update, a race won by its first update, a session's write, an unknown write never stored. */
function sound(): MemoryData {
  const seed = version('seed', { operation: 'created' })
  const upd = version('u1')
  const won = version('r0-0')
  const sess = version('s0-0\n', { created_by: { type: 'session_actor', session_id: 'sesn_1' } })
  return {
    stores: ['memstore_1'],
    sessions: ['sesn_1'],
    writes: [
      write('seed', { kind: 'seed' }),
      write('u1'),
      write('r0-0', { kind: 'race', base: sha256('u1'), pair: 0 }),
      write('r0-1', { kind: 'race', base: sha256('u1'), pair: 0, outcome: 'refused', why: '409' }),
      { ...write('s0-0'), kind: 'session', sha: sha256('s0-0\n'), session: 'sesn_1', memoryId: undefined },
      write('u2', { outcome: 'unknown', why: '503' }),
    ],
    memories: [{ store: 'memstore_1', id: 'mem_1', path: '/a.md', sha: sess.sha!, versionId: sess.id }],
    versions: [sess, won, upd, seed],
    readErrors: [],
  }
}
const none = { versions: [], current: [], preconditions: [], actors: [] }

t.same(memoryProblems(sound()), none, 'a sound history has no problem')

t.test('an acknowledged write missing, a doubled one, a refused one stored', async (t) => {
  const d = sound()
  d.versions = d.versions.filter((v) => v.sha !== sha256('u1'))
  t.match(memoryProblems(d).versions, [/api-update .*u1 \(acknowledged\).*: 0 versions/])
  const e = sound()
  e.versions.splice(1, 0, version('u2'), version('u2'))
  t.match(memoryProblems(e).versions, [/u2 \(unknown: 503\).*: 2 versions/])
  const f = sound()
  f.versions.splice(1, 0, version('r0-1'))
  t.ok(
    memoryProblems(f).versions.some((p) => /r0-1 \(refused: 409\).*: 1 versions/.test(p)),
    'a refused write stored',
  )
})

t.test('content no writer wrote, and a delete nobody made', async (t) => {
  const d = sound()
  d.versions.unshift(version('stray'), version('x', { operation: 'deleted', sha: null }))
  const p = memoryProblems(d).versions
  t.ok(p.some((x) => /holds content no writer wrote/.test(x)))
  t.ok(p.some((x) => /deleted mem_1/.test(x)))
})

t.test("a memory's state that is not its latest version", async (t) => {
  const d = sound()
  d.memories[0]!.versionId = d.versions[1]!.id
  d.memories[0]!.sha = d.versions[1]!.sha!
  t.match(memoryProblems(d).current, [/mem_1 \(\/a\.md\): current .* latest listed/])
})

t.test('a precondition won twice', async (t) => {
  const d = sound()
  d.writes.find((w) => w.tag === 'r0-1')!.outcome = 'acknowledged'
  t.ok(memoryProblems(d).preconditions.some((p) => /pair 0: both updates/.test(p)))
  const e = sound()
  // The second update of the pair stored after the first: it did not follow the version it required.
  e.writes.find((w) => w.tag === 'r0-1')!.outcome = 'unknown'
  e.versions.unshift(version('r0-1'))
  const p = memoryProblems(e).preconditions
  t.ok(p.some((x) => /won by 2 updates/.test(x)))
  t.ok(p.some((x) => /r0-1 .*follows .*not the/.test(x)))
})

t.test('a version by the wrong writer', async (t) => {
  const d = sound()
  d.versions[0]!.created_by = api
  t.match(memoryProblems(d).actors, [/session .*s0-0 .*created_by/])
})
