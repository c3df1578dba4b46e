// The owner's record cache (actors/kit/store.ts) with copies: `get` hands each reader its own copy, `peek` one shared
// value per revision, and a write is never hidden by a value decoded before it.
import t from 'tap'
import { connect } from '@nats-io/transport-node'
import { Kvm } from '@nats-io/kv'
import { RecordStore } from '../../actors/kit/store.js'
import { startNats } from '../helpers/nats.js'

const nats = await startNats()
const nc = await connect({ servers: nats.url })
t.teardown(async () => {
  await nc.close()
  await nats.stop()
})

t.test('peek shares one decoded value per revision; get copies; a write replaces what peek shares', async (t) => {
  const kv = await new Kvm(nc).create('record_store_peek', { history: 1 })
  const store = new RecordStore<{ n: number; tags: string[] }>(kv, () => true, true)
  const rev = await store.put('r', { n: 1, tags: ['a'] })
  const [a, b] = [await store.peek('r'), await store.peek('r')]
  t.equal(a?.revision, rev)
  t.equal(a?.value, b?.value, 'the same object for every peek of one revision')
  const [c, d] = [await store.get('r'), await store.get('r')]
  t.not(c?.value, d?.value, 'get decodes a copy per read')
  t.same(c?.value, { n: 1, tags: ['a'] })
  const next = await store.update('r', { n: 2, tags: ['b'] }, rev)
  t.ok(next)
  const e = await store.peek('r')
  t.equal(e?.revision, next)
  t.same(e?.value, { n: 2, tags: ['b'] }, 'the new revision, not the value shared before it')
  t.same(a?.value, { n: 1, tags: ['a'] }, 'what was shared before is left as it was')
  t.equal(await store.peek('missing'), undefined)
})
