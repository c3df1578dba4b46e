import { jetstream } from '@nats-io/jetstream'
import { Kvm } from '@nats-io/kv'
import { connect } from '@nats-io/transport-node'
import t from 'tap'
import { LoadedStore } from '../../actors/memory/loaded.js'
import { MemoryRecords, type VersionRecord } from '../../actors/memory/records.js'
import { API_ACTOR } from '../../actors/memory/state.js'
import { MemoryTree } from '../../actors/memory/tree.js'
import { MemoryWrites } from '../../actors/memory/writes.js'
import { newId } from '../../protocol/ids.js'
import { Buckets } from '../../protocol/subjects.js'
import { startNats } from '../helpers/nats.js'

/**
 * A memory's state and its version are one step (docs/ARCHITECTURE.md "Memory stores"): a host that dies between any
 * two of a memory's writes leaves, for the owner that loads the store next, each memory exactly as its latest version
 * says. A create, a change of content, a rename and a delete are twelve writes; the writer is cut off after each
 * number of them in turn (nothing after the cut is written, as when the process is SIGKILLed), and the store is then
 * loaded afresh as a new owner loads it.
 */
const nats = await startNats()
t.teardown(() => nats.stopNow())
const nc = await connect({ servers: nats.url })
t.teardown(() => nc.close())
const kv = await new Kvm(nc).create(Buckets.memories, { history: 1 })
const js = jetstream(nc)

class Cut extends Error {}

/** Records whose writes stop for good after `budget` of them. */
function cutAfter(budget: number): { records: MemoryRecords; written: () => number; cut: () => boolean } {
  let n = 0
  let hit = false
  const records = new MemoryRecords(kv, Buckets.memories, js, () => true)
  for (const name of ['putContent', 'keepVersion', 'commit', 'dropHead', 'dropContent'] as const) {
    const write = (records[name] as (...a: unknown[]) => Promise<unknown>).bind(records)
    ;(records as unknown as Record<string, unknown>)[name] = async (...a: unknown[]) => {
      if (n >= budget) {
        hit = true
        throw new Cut(`cut after ${budget} writes`)
      }
      n++
      return write(...a)
    }
  }
  return { records, written: () => n, cut: () => hit }
}

async function load(store: string) {
  const records = new MemoryRecords(kv, Buckets.memories, js, () => true)
  const loaded = new LoadedStore(store, new MemoryTree(await records.loadHeads(store)), records)
  return { loaded, history: await loaded.versions(), records }
}

const newest = (vs: VersionRecord[]) => [...vs].sort((a, b) => (a.created_at < b.created_at ? 1 : a.created_at > b.created_at ? -1 : a.id < b.id ? 1 : -1))[0]

t.test('cut after every number of writes: each memory is as its latest version says', async (t) => {
  let total = Number.POSITIVE_INFINITY
  for (let budget = 0; budget <= total; budget++) {
    const store = newId('memstore')
    const { records, written, cut } = cutAfter(budget)
    const writes = new MemoryWrites(records)
    const s = new LoadedStore(store, new MemoryTree([]), records)
    let commits = 0
    let id: string | undefined
    try {
      const made = await writes.create(s, '/a/notes.md', 'one', API_ACTOR)
      id = made.head.id
      commits++
      const changed = await writes.modify(s, made, { content: 'two' }, API_ACTOR)
      commits++
      const moved = await writes.modify(s, changed, { path: '/b/notes.md' }, API_ACTOR)
      commits++
      await writes.remove(s, moved, API_ACTOR)
      commits++
      if (!cut()) total = written()
    } catch (err) {
      // A cut inside the delete's tidying is swallowed there: the delete is done.
      if (!(err instanceof Cut)) throw err
    }

    const { loaded, history, records: fresh } = await load(store)
    const mine = id === undefined ? [] : [...loaded.tree.all().map((h) => h.head.version), ...history.page({ memory_id: id }, undefined, 100).items]
    const versions = [...new Map(mine.map((v) => [v.id, v])).values()]
    t.equal(versions.length, commits, `after ${budget} writes: one version per commit (${commits})`)
    const live = id === undefined ? undefined : loaded.tree.get(id)
    const latest = newest(versions)
    if (!latest) t.equal(live, undefined, `after ${budget} writes: no version, no memory`)
    else if (latest.operation === 'deleted') t.equal(live, undefined, `after ${budget} writes: deleted, and so its latest version says`)
    else {
      t.equal(live?.head.version.id, latest.id, `after ${budget} writes: the state is its latest version (${latest.operation})`)
      t.equal(live?.head.path, latest.path)
      t.equal(await fresh.content(store, latest.id), commits === 1 ? 'one' : 'two', 'its content is there')
    }
    // A second load finds the same (a tombstone finished by the first stays finished).
    const again = await load(store)
    t.same(
      again.loaded.tree.all().map((h) => h.head),
      loaded.tree.all().map((h) => h.head),
    )
  }
  t.equal(total, 12, 'a create, two changes and a delete are twelve writes')
})
