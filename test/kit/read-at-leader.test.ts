// A KV read at the bucket's leader: the same entry as a direct get (which any replica may answer, a lagging one
// with "no such key"), without leaving the bucket handle changed for the reads that follow.
import t from 'tap'
import { connect } from '@nats-io/transport-node'
import { Kvm } from '@nats-io/kv'
import { readAtLeader } from '../../actors/kit/store.js'
import { startNats } from '../helpers/nats.js'

const nats = await startNats()
const nc = await connect({ servers: nats.url })
t.teardown(async () => {
  await nc.close()
  await nats.stop()
})

t.test('reads what a direct get reads, and leaves the handle as it was', async (t) => {
  const kv = await new Kvm(nc).create('leader_reads', { history: 1, allow_direct: true })
  const rev = await kv.put('k', new TextEncoder().encode('v1'))
  const bucket = kv as unknown as { direct?: boolean }
  t.equal(bucket.direct, true, 'the bucket allows direct gets')
  const e = await readAtLeader(kv, 'k')
  t.equal(e?.revision, rev)
  t.equal(e?.string(), 'v1')
  t.equal(bucket.direct, true, 'direct gets are back on')
  t.equal(await readAtLeader(kv, 'missing'), null)
  // Concurrent reads of both kinds at once: each gets its own answer.
  const [a, b] = await Promise.all([readAtLeader(kv, 'k'), kv.get('k')])
  t.equal(a?.string(), 'v1')
  t.equal(b?.string(), 'v1')
  t.equal(bucket.direct, true)
})
