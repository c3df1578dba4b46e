// Does the nats-server on PATH keep a stream's replicas alike when subjects are purged during faults? A 3-node
// cluster, one R3 stream, publishes on 40 subjects with a purge of one subject every third publish (what the object
// stores do: rollups, chunks purged on delete and at every workspace save), while one node is SIGSTOPped for 10 s and
// the others SIGKILLed and restarted, three rounds; then, once stable, each node's own count of the stream's messages.
// `npx tsx test/chaos/purge-divergence.ts [purge|delete|nopurge]`. On nats-server 2.9.10 (Debian's): with subject
// purges n1 75, n2 3, n3 75 messages (twice: 74, 2, 74); with messages deleted by sequence instead, 16,248 on each;
// without either, 44,616 on each. A replica left with fewer messages loses them for
// everyone when it leads: what chaos runs at 180 s saw as skill bundles and workspace saves gone (docs/ARCHITECTURE.md).
import { connect } from '@nats-io/transport-node'
import { jetstream, jetstreamManager } from '@nats-io/jetstream'
import { startNatsCluster } from '../helpers/nats-cluster.js'

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const c = await startNatsCluster({ size: 3 })
await c.waitReady()
const nc = await connect({ servers: c.url, maxReconnectAttempts: -1 })
const jsm = await jetstreamManager(nc)
const js = jetstream(nc)
await jsm.streams.add({ name: 'S', subjects: ['s.>'], num_replicas: 3, allow_rollup_hdrs: true, allow_direct: true } as any)
/** `purge` (default): a subject purge every third publish; `delete`: a message deleted by sequence instead; `nopurge`. */
const mode = process.argv[2] ?? 'purge'
const withPurges = mode !== 'nopurge'
const seqs: number[] = []
let stop = false
let pubs = 0,
  purges = 0,
  errs = 0
const load = (async () => {
  for (let n = 0; !stop; n++) {
    const k = n % 40
    try {
      seqs.push((await js.publish(`s.k${k}.${n}`, new Uint8Array(64), { timeout: 2000 })).seq)
      pubs++
      if (withPurges && n % 3 === 0) {
        if (mode === 'delete') await jsm.streams.deleteMessage('S', seqs.shift()!, false)
        else await jsm.streams.purge('S', { filter: `s.k${(k + 7) % 40}.>` })
        purges++
      }
    } catch {
      errs++
      await sleep(50)
    }
  }
})()
const [n1, n2, n3] = c.nodes
for (let round = 0; round < 3; round++) {
  await sleep(3000)
  n3!.pause()
  await sleep(10000)
  n3!.resume()
  await sleep(2000)
  await n1!.kill()
  await sleep(3000)
  await n1!.restart()
  await sleep(2000)
  await n2!.kill()
  await n2!.restart()
}
stop = true
await load
await c.waitStable({ streams: ['S'], stableMs: 3000, timeoutMs: 60000 }).catch((e) => console.log('not stable', e.message))
await sleep(5000)
const counts: string[] = []
for (const node of c.nodes) {
  const j = (await (await fetch(`${node.monitorUrl}/jsz?accounts=true&streams=true`)).json()) as any
  const st = j.account_details?.flatMap((a: any) => a.stream_detail ?? []).find((s: any) => s.name === 'S')
  counts.push(`${node.name}: msgs ${st?.state?.messages} first ${st?.state?.first_seq} last ${st?.state?.last_seq}`)
}
console.log(mode, { pubs, purges, errs })
console.log(counts.join('\n'))
await nc.close()
await c.stop()
process.exit(0)
