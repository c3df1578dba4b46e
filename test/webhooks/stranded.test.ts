// The sweeper of stranded deliveries (actors/webhook/orphans.ts): a message still stored at or below its consumer's
// acknowledgement floor, which the consumer will never hand out again, is published again (once, however many
// sweepers see it: its `Nats-Msg-Id` comes from the old sequence) and its old sequence deleted, after it was seen stranded for the confirmation time. nats-server
// 2.9.10 leaves the work queue so after leader changes; here the state is made deterministically, on a stream that
// keeps acknowledged messages, by a consumer created to start past the first two (a work queue's consumer must start at
// its first message).
import { AckPolicy, DeliverPolicy } from '@nats-io/jetstream'
import { headers } from '@nats-io/nats-core'
import pino from 'pino'
import t from 'tap'
import { OrphanSweeper, REQUEUED_HEADER } from '../../actors/webhook/orphans.js'
import { natsWithClient } from '../helpers/nats.js'

const { js, jsm } = await natsWithClient(t)
const log = pino({ level: 'silent' })
const queue = { stream: 'TQ', consumer: 'c', subjects: 'tq.>', eventHeader: 'Troupe-Webhook-Event' }

t.test('stranded messages are queued again once, then their old sequences deleted', async (t) => {
  await jsm.streams.add({ name: 'TQ', subjects: ['tq.>'] })
  for (const event of ['whe_1', 'whe_2', 'whe_3']) {
    const h = headers()
    h.set(queue.eventHeader, event)
    await js.publish(`tq.${event}`, event, { headers: h, msgID: event })
  }
  // It starts past messages 1 and 2, which it will never hand out; message 3 is handed out, acknowledged and removed
  // (as a work queue removes it), and the floor passes all three.
  await jsm.consumers.add('TQ', { durable_name: 'c', ack_policy: AckPolicy.Explicit, deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: 3 })
  const third = await (await js.consumers.get('TQ', 'c')).next({ expires: 2000 })
  await third!.ackAck()
  await jsm.streams.deleteMessage('TQ', 3, false)
  t.equal((await jsm.consumers.info('TQ', 'c')).ack_floor.stream_seq, 3)

  const sweepers = [0, 1].map(() => new OrphanSweeper({ js, jsm, queue, log, confirmMs: 100 }))
  t.same(await Promise.all(sweepers.map((s) => s.pass())), [0, 0], 'first seen: not yet queued again')
  await new Promise((r) => setTimeout(r, 150))
  t.equal(await sweepers[0]!.pass(), 2, 'seen stranded twice, the confirmation time apart: both published again')
  t.equal(await sweepers[1]!.pass(), 0, 'the other sweeper finds them gone')

  const { state } = await jsm.streams.info('TQ')
  t.equal(state.messages, 2, 'the old two deleted, their copies stored')
  t.equal(state.first_seq, 4)
  const copies = [4, 5].map(async (seq) => {
    const m = await jsm.streams.getMessage('TQ', { seq })
    return { subject: m!.subject, event: m!.header.get(queue.eventHeader), from: m!.header.get(REQUEUED_HEADER), data: m!.string() }
  })
  t.same(await Promise.all(copies), [
    { subject: 'tq.whe_1', event: 'whe_1', from: '1', data: 'whe_1' },
    { subject: 'tq.whe_2', event: 'whe_2', from: '2', data: 'whe_2' },
  ])
  // The consumer hands the copies out as any new message.
  const batch = await (await js.consumers.get('TQ', 'c')).fetch({ max_messages: 2, expires: 1000 })
  const seqs: number[] = []
  for await (const m of batch) seqs.push(m.seq)
  t.same(seqs, [4, 5])
  t.same(await Promise.all(sweepers.map((s) => s.pass())), [0, 0], 'nothing stranded any more')
})
