import { createHash } from 'node:crypto'
import { jetstream, jetstreamManager } from '@nats-io/jetstream'
import { connect } from '@nats-io/transport-node'
import t from 'tap'
import { readChunks } from '../../actors/kit/object-stores.js'
import { startNats } from '../helpers/nats.js'

/**
 * An object's chunks by direct get, and, for reads that must be whole, from the stream's leader when no replica
 * answers one: here a stream without direct gets stands for the replica that has not caught up (it answers nothing).
 */
const nats = await startNats()
const nc = await connect({ servers: nats.url })
t.teardown(async () => {
  await nc.close()
  await nats.stop()
})
// A direct get of a stream without them is never answered: each waits out this timeout.
const jsm = await jetstreamManager(nc, { timeout: 500 })
const js = jetstream(nc)
await jsm.streams.add({ name: 'CHUNKS_NO_DIRECT', subjects: ['c.>'], allow_direct: false })
const parts = [Buffer.from('first chunk '), Buffer.from('second chunk')]
await js.publish('c.other', 'another object in between')
for (const p of parts) await js.publish('c.obj', p)
const digest = `SHA-256=${createHash('sha256').update(Buffer.concat(parts)).digest('base64url')}`

const read = async (from: 'any replica' | 'leader if missing') => {
  const got: Buffer[] = []
  for await (const c of readChunks(jsm, 'CHUNKS_NO_DIRECT', 'c.obj', parts.length, digest, from)) got.push(Buffer.from(c))
  return Buffer.concat(got).toString()
}

t.test('a chunk no replica gives is asked of the leader when the read must be whole', async (t) => {
  await t.rejects(read('any replica'), /chunk 1 of 2 is gone/, 'by direct get alone, it looks gone')
  t.equal(await read('leader if missing'), 'first chunk second chunk')
})

t.test('a chunk that is gone everywhere is still gone', async (t) => {
  await jsm.streams.purge('CHUNKS_NO_DIRECT', { filter: 'c.obj' })
  await t.rejects(read('leader if missing'), /chunk 1 of 2 is gone/)
})
