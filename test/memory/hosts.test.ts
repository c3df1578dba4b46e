import { createHash } from 'node:crypto'
import { Kvm } from '@nats-io/kv'
import { connect } from '@nats-io/transport-node'
import t from 'tap'
import { decode } from '../../protocol/codec.js'
import { Buckets, partitionOf, partitionToken } from '../../protocol/subjects.js'
import '../helpers/keepalive.js'
import { startNats } from '../helpers/nats.js'
import { clientFor, startTroupe } from '../helpers/troupe.js'
import { until } from '../helpers/wait.js'

/**
 * Memory stores on two hosts sharing one NATS: writers on both hosts race for the same precondition and the same path,
 * and exactly one of each race wins; every memory's current state is its latest version; a store's owner SIGKILLed
 * mid-writes leaves nothing half-done on the host that takes it over.
 */
const nats = await startNats()
const hosts = [await startTroupe({ natsUrl: nats.url }), await startTroupe({ natsUrl: nats.url })]
t.teardown(() => {
  for (const h of hosts) h.killNow()
  nats.stopNow()
})
const stores = hosts.map((h) => clientFor(h.url, { maxRetries: 4 }).beta.memoryStores)
const [a, b] = stores
const sha = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex')
const outcome = (p: Promise<unknown>) =>
  p.then(
    () => 'won',
    (e: any) => e?.error?.error?.type ?? `${e?.status} ${e?.message}`,
  )

await until(
  'both hosts serve',
  async () =>
    (await b!.list().then(
      () => true,
      () => false,
    )) &&
    (await a!.list().then(
      () => true,
      () => false,
    )),
  30_000,
)

t.test('concurrent preconditions from two hosts: exactly one wins each', async (t) => {
  const store = (await a!.create({ name: 'race' })).id
  const m = await a!.memories.create(store, { path: '/counter', content: '0' })
  let content = '0'
  for (let round = 1; round <= 20; round++) {
    const tries = Array.from({ length: 6 }, (_, i) => {
      const via = i % 2 ? a! : b!
      return outcome(
        via.memories.update(m.id, { memory_store_id: store, content: `${round}:${i}`, precondition: { type: 'content_sha256', content_sha256: sha(content) } }),
      )
    })
    const results = await Promise.all(tries)
    t.equal(results.filter((r) => r === 'won').length, 1, `round ${round}: one winner (${results.join(', ')})`)
    t.equal(results.filter((r) => r === 'memory_precondition_failed_error').length, 5, 'the others refused with the precondition error')
    content = (await b!.memories.retrieve(m.id, { memory_store_id: store })).content!
    t.match(content, new RegExp(`^${round}:`))
  }
  const versions = (await a!.memoryVersions.list(store, { memory_id: m.id, limit: 100 })).data
  t.equal(versions.length, 21, 'one version per winner, none for a loser')
  t.equal(versions[0]!.id, (await a!.memories.retrieve(m.id, { memory_store_id: store })).memory_version_id, 'the state is its latest version')
})

t.test('concurrent creates of one path from two hosts: exactly one wins each path', async (t) => {
  const store = (await b!.create({ name: 'paths' })).id
  for (let round = 0; round < 20; round++) {
    // One exact path and one that overlaps it (an ancestor), from both hosts at once.
    const results = await Promise.all([
      outcome(a!.memories.create(store, { path: `/r${round}/x`, content: 'a' })),
      outcome(b!.memories.create(store, { path: `/r${round}/x`, content: 'b' })),
      outcome(a!.memories.create(store, { path: `/r${round}`, content: 'c' })),
      outcome(b!.memories.create(store, { path: `/r${round}/x/y`, content: 'd' })),
    ])
    t.equal(results.filter((r) => r === 'won').length, 1, `round ${round}: one path of the four wins (${results.join(', ')})`)
    t.ok(
      results.every((r) => r === 'won' || r === 'memory_path_conflict_error'),
      'the others are path conflicts',
    )
  }
  const listed = (await a!.memories.list(store, { limit: 100 })).data
  t.equal(listed.length, 20)
})

t.test("the store's owner SIGKILLed amid writes: each memory is as its latest version says, nothing lost or doubled", async (t) => {
  const store = (await a!.create({ name: 'crash' })).id
  const ids: string[] = []
  for (let i = 0; i < 10; i++) ids.push((await a!.memories.create(store, { path: `/k/${i}`, content: 'start' })).id)
  // The store's owner is killed while writers write through the other host.
  const nc = await connect({ servers: nats.url })
  t.teardown(() => nc.close())
  const placement = await new Kvm(nc).open(Buckets.placement)
  const holder = decode<{ host: string }>((await placement.get(`memory_store.${partitionToken(partitionOf(store))}`))!.value).host
  const owner = hosts.findIndex((h) => h.stdout().includes(holder))
  t.ok(owner >= 0, `the owner ${holder} is one of the two hosts`)
  const b = owner === 0 ? (stores[1] as typeof a) : a
  const acked = new Map<string, string[]>()
  let stop = false
  const writers = ids.map(async (id, i) => {
    for (let n = 0; !stop && n < 200; n++) {
      const content = `${i}:${n}`
      await b!.memories.update(id, { memory_store_id: store, content }).then(
        () => acked.set(id, [...(acked.get(id) ?? []), content]),
        () => undefined,
      )
    }
  })
  await until('writes under way', () => [...acked.values()].flat().length >= 20, 20_000, 20)
  await hosts[owner]!.kill()
  await until('writes go on after the kill', () => [...acked.values()].flat().length >= 80, 30_000, 50)
  stop = true
  await Promise.all(writers)
  for (const id of ids) {
    const m = await b!.memories.retrieve(id, { memory_store_id: store })
    const versions = []
    for await (const v of b!.memoryVersions.list(store, { memory_id: id, view: 'full' })) versions.push(v)
    t.equal(versions[0]!.id, m.memory_version_id, `${id}: the state is its latest version`)
    t.equal(versions[0]!.content, m.content)
    t.equal(versions[0]!.content_sha256, m.content_sha256)
    const contents = versions.map((v) => v.content)
    t.equal(new Set(contents).size, contents.length, 'no version twice')
    for (const c of acked.get(id) ?? []) t.ok(contents.includes(c), `acknowledged ${c} has its version`)
    t.equal(versions.at(-1)!.operation, 'created')
  }
})
