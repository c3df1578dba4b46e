// An R3 object store written only through our layer (actors/kit/object-writes.ts: puts over names, deletes, nothing
// purged) under stacked faults (a node SIGSTOPped, the two others SIGKILLed and restarted) ends with its three replicas
// alike, and every object it lists reads whole. The short form of test/chaos/purge-divergence.ts: the same schedule with
// a subject purge every third publish left nats-server 2.9.10's replicas at 72/3/72 and 1/1/73 messages (two runs).
import t from 'tap'
import '../helpers/keepalive.js'
import { jetstream, jetstreamManager } from '@nats-io/jetstream'
import { Objm } from '@nats-io/obj'
import { connect } from '@nats-io/transport-node'
import { readChunks } from '../../actors/kit/object-stores.js'
import { ObjectWrites } from '../../actors/kit/object-writes.js'
import { objectChunkPrefix } from '../../protocol/subjects.js'
import { startNatsCluster } from '../helpers/nats-cluster.js'
import { replicaStates, stackFaults } from '../helpers/stacked-faults.js'
import { until } from '../helpers/wait.js'

t.setTimeout(120_000)
const STORE = 'replicas_test'
const STREAM = `OBJ_${STORE}`
/** Writers at once, each over its own names. */
const WRITERS = 3
const NAMES = 12

const cluster = await startNatsCluster({ size: 3 })
await cluster.waitReady()
const nc = await connect({ servers: cluster.url, maxReconnectAttempts: -1 })
t.teardown(async () => {
  await nc.close()
  await cluster.stop()
})
const js = jetstream(nc, { timeout: 2000 })
const jsm = await jetstreamManager(nc)
await new Objm(js).create(STORE, { replicas: 3 })
const writes = new ObjectWrites(js, STORE)

t.test('puts over names and deletes under stacked faults leave every replica alike', async (t) => {
  let stop = false
  let done = 0
  let failed = 0
  const writer = async (w: number) => {
    for (let n = 0; !stop; n++) {
      const name = `w${w}.o${n % NAMES}`
      try {
        // Two chunks an object: a put over a name deletes three messages by sequence, a delete two.
        if (n % 3 === 0) await writes.delete(`w${w}.o${(n + 5) % NAMES}`)
        else await writes.put(name, [new Uint8Array(100).fill(n % 256)], 64)
        done++
      } catch {
        failed++
        await new Promise((r) => setTimeout(r, 50))
      }
    }
  }
  const load = Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w)))
  await stackFaults(cluster, { rounds: 1, pauseMs: 6000, gapMs: 1500 })
  stop = true
  await load
  t.ok(done > 50, `writes went on around the faults (${done} done, ${failed} failed)`)
  await cluster.waitStable({ streams: [STREAM], stableMs: 2000, timeoutMs: 60_000 })

  // A replica that was behind catches up; one that applied a deletion unlike the others never does.
  let last: Awaited<ReturnType<typeof replicaStates>> = []
  const alike = await until(
    'every replica to hold the same messages',
    async () => {
      last = await replicaStates(cluster, STREAM)
      const [a, ...rest] = last.map(({ node: _, ...state }) => JSON.stringify(state))
      return rest.every((s) => s === a) && last[0]!.messages !== undefined
    },
    30_000,
    250,
  ).catch(() => false)
  t.ok(alike, `replicas alike: ${last.map((s) => `${s.node} ${s.messages} msgs ${s.bytes} bytes, ${s.first_seq}..${s.last_seq}`).join('; ')}`)

  // Every object listed reads whole (chunks present, digest right), at the leader when a replica lacks one.
  const listed = await (await new Objm(js).open(STORE)).list()
  for (const info of listed) {
    const chunks: Uint8Array[] = []
    for await (const c of readChunks(jsm, STREAM, objectChunkPrefix(STORE) + info.nuid, info.chunks, info.digest, 'leader if missing')) chunks.push(c)
    t.equal(Buffer.concat(chunks).length, info.size, `${info.name} reads whole`)
  }
  t.ok(listed.length > 0, `${listed.length} objects listed`)
})
