// Does the nats-server on PATH keep a stream's replicas alike when subjects are purged during faults? A 3-node
// cluster, one R3 stream, publishes on 40 subjects with a purge of one subject every third publish (what nats.js's
// object store does: rollups, chunks purged on a delete and on a put over a name), while one node is SIGSTOPped for
// 10 s and the others SIGKILLed and restarted, three rounds; then, once stable, each node's own count of the stream's
// messages. `npx tsx test/chaos/purge-divergence.ts [purge|delete|nopurge|objects] [--rounds 3] [--pause 10000]
// [--gap 2000]`. On nats-server 2.9.10 (Debian's): with subject purges n1 75, n2 3, n3 75 messages (again: 74, 2, 74;
// 72, 66, 72); with messages deleted by sequence instead, 16,248 on each (again: 11,748); without either, 44,616 on
// each (again: 18,817). `objects`: an R3 object store written through our layer (actors/kit/object-writes.ts: puts
// over 40 names, a delete every third operation, nothing purged): alike too (120 on each; again 130). A replica left with fewer
// messages loses them for everyone when it leads: what chaos runs at 180 s saw as skill bundles and workspace saves
// gone (docs/ARCHITECTURE.md).
// test/kit/object-store-replicas.test.ts is the short form in the suite.
import { parseArgs } from 'node:util'
import { jetstream, jetstreamManager } from '@nats-io/jetstream'
import { Objm } from '@nats-io/obj'
import { connect } from '@nats-io/transport-node'
import { ObjectWrites } from '../../actors/kit/object-writes.js'
import { startNatsCluster } from '../helpers/nats-cluster.js'
import { replicaStates, stackFaults } from '../helpers/stacked-faults.js'

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: { rounds: { type: 'string', default: '3' }, pause: { type: 'string', default: '10000' }, gap: { type: 'string', default: '2000' } },
})
/** `purge` (default): a subject purge every third publish; `delete`: a message deleted by sequence instead; `nopurge`; `objects`. */
const mode = positionals[0] ?? 'purge'
const c = await startNatsCluster({ size: 3 })
await c.waitReady()
const nc = await connect({ servers: c.url, maxReconnectAttempts: -1 })
const jsm = await jetstreamManager(nc)
const js = jetstream(nc, { timeout: 2000 })
const STREAM = mode === 'objects' ? 'OBJ_divergence' : 'S'
if (mode === 'objects') await new Objm(js).create('divergence', { replicas: 3 })
else await jsm.streams.add({ name: 'S', subjects: ['s.>'], num_replicas: 3, allow_rollup_hdrs: true, allow_direct: true } as any)
const writes = new ObjectWrites(js, 'divergence')
const seqs: number[] = []
let stop = false
let pubs = 0,
  removals = 0,
  errs = 0
const load = (async () => {
  for (let n = 0; !stop; n++) {
    const k = n % 40
    try {
      if (mode === 'objects') {
        // Two chunks per object: a put over a name deletes three messages, a delete two.
        if (n % 3 === 0) await writes.delete(`o${(k + 7) % 40}`)
        else await writes.put(`o${k}`, [new Uint8Array(100).fill(n % 256)], 64)
        if (n % 3 === 0) removals++
        else pubs++
        continue
      }
      seqs.push((await js.publish(`s.k${k}.${n}`, new Uint8Array(64))).seq)
      pubs++
      if (mode !== 'nopurge' && n % 3 === 0) {
        if (mode === 'delete') await jsm.streams.deleteMessage('S', seqs.shift()!, false)
        else await jsm.streams.purge('S', { filter: `s.k${(k + 7) % 40}.>` })
        removals++
      }
    } catch {
      errs++
      await sleep(50)
    }
  }
})()
await stackFaults(c, { rounds: Number(values.rounds), pauseMs: Number(values.pause), gapMs: Number(values.gap) })
stop = true
await load
await c.waitStable({ streams: [STREAM], stableMs: 3000, timeoutMs: 60000 }).catch((e) => console.log('not stable', e.message))
await sleep(5000)
console.log(mode, { pubs, removals, errs })
for (const s of await replicaStates(c, STREAM)) console.log(`${s.node}: msgs ${s.messages} bytes ${s.bytes} first ${s.first_seq} last ${s.last_seq}`)
await nc.close()
await c.stop()
process.exit(0)
