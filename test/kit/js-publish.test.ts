import t from 'tap'
import { connect, headers, NoRespondersError, TimeoutError } from '@nats-io/transport-node'
import { errors } from '@nats-io/nats-core'
import { JetStreamApiCodes, JetStreamApiError, jetstreamManager } from '@nats-io/jetstream'
import { JsPublisher } from '../../actors/kit/js-publish.js'
import { startNats } from '../helpers/nats.js'
import { pauseGroup } from '../helpers/procs.js'

// The hot path's JetStream publisher answers as nats.js's own publish does, with nats.js's error classes, so the
// callers' compare-and-set checks and their classification of failures (kit/nats-errors.ts) hold unchanged.

const nats = await startNats()
t.teardown(() => nats.stopNow())
const nc = await connect({ servers: nats.url })
t.teardown(() => nc.close())
await (await jetstreamManager(nc)).streams.add({ name: 'PUB', subjects: ['pub.>'] })
const publisher = new JsPublisher(nc)
const enc = new TextEncoder()
const expecting = (seq: number) => {
  const h = headers()
  h.set('Nats-Expected-Last-Subject-Sequence', String(seq))
  return h
}

t.test('a stored message: its stream sequence; a fenced one at the right sequence too', async (t) => {
  const a = await publisher.publish('pub.a', enc.encode('one'), undefined, 5000)
  t.equal(a.stream, 'PUB')
  t.equal(a.duplicate, false)
  const b = await publisher.publish('pub.a', enc.encode('two'), expecting(a.seq), 5000)
  t.equal(b.seq, a.seq + 1)
})

t.test('a duplicate message id is acknowledged as a duplicate, not stored twice', async (t) => {
  const h = () => {
    const x = headers()
    x.set('Nats-Msg-Id', 'same')
    return x
  }
  const first = await publisher.publish('pub.d', enc.encode('x'), h(), 5000)
  const again = await publisher.publish('pub.d', enc.encode('x'), h(), 5000)
  t.equal(again.seq, first.seq)
  t.equal(again.duplicate, true)
})

t.test('a wrong last sequence is the JetStream API error a fence checks for', async (t) => {
  const err = await publisher.publish('pub.b', enc.encode('x'), expecting(12345), 5000).catch((e) => e)
  t.ok(err instanceof JetStreamApiError, String(err))
  t.equal((err as JetStreamApiError).code, JetStreamApiCodes.StreamWrongLastSequence)
})

t.test('a subject no stream takes: no responders', async (t) => {
  const err = await publisher.publish('nowhere.x', enc.encode('x'), undefined, 5000).catch((e) => e)
  t.ok(err instanceof NoRespondersError, String(err))
})

t.test('no acknowledgement in time (the server paused): a timeout; the message may be stored', async (t) => {
  await pauseGroup(nats.pgid)
  try {
    const err = await publisher.publish('pub.c', enc.encode('x'), undefined, 300).catch((e) => e)
    t.ok(err instanceof TimeoutError, String(err))
  } finally {
    process.kill(-nats.pgid, 'SIGCONT')
  }
  // The connection carries on once the server does.
  t.ok((await publisher.publish('pub.c', enc.encode('y'), undefined, 5000)).seq > 0)
})

t.test('a closed connection fails what is in flight and what comes after', async (t) => {
  const own = await connect({ servers: nats.url })
  const p = new JsPublisher(own)
  await own.close()
  const err = await p.publish('pub.e', enc.encode('x'), undefined, 5000).catch((e) => e)
  t.ok(err instanceof errors.ClosedConnectionError, String(err))
})
