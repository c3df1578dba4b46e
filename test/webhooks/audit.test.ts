// The audit (actors/webhook/fanout.ts, `audit`): the sources read again behind the fan-out, and a delivery queued again
// when it has no record by then and nothing queued for its endpoint from before could be it: the work queue lost it.
// Here the fan-out itself does not run, so every delivery is "lost", deterministically; a delivery with a record, and one
// whose endpoint still has older deliveries waiting, are not queued again until that changes.
import { jetstream, jetstreamManager } from '@nats-io/jetstream'
import { Kvm } from '@nats-io/kv'
import { connect } from '@nats-io/transport-node'
import pino from 'pino'
import t from 'tap'
import { ensureOutbox, Outbox, webhookEventId } from '../../actors/kit/outbox.js'
import { DELIVERIES_STREAM, deliverySubject, EVENT_HEADER, enqueueDelivery, ensureDeliveriesStream, RECORDS_BUCKET } from '../../actors/webhook/deliveries.js'
import { FanOut, openPositions } from '../../actors/webhook/fanout.js'
import type { WebhookState } from '../../actors/webhook/state.js'
import { encode } from '../../protocol/codec.js'
import { newId } from '../../protocol/ids.js'
import { Buckets } from '../../protocol/subjects.js'
import { startNats } from '../helpers/nats.js'
import { until } from '../helpers/wait.js'

const nats = await startNats()
const nc = await connect({ servers: nats.url })
const js = jetstream(nc)
const jsm = await jetstreamManager(nc)
const kvm = new Kvm(js)
const log = pino({ level: 'silent' })
const storage = { jsm, replicas: 1, lowerReplicas: false, log }
t.teardown(async () => {
  await nc.close()
  await nats.stop()
})

/** An endpoint subscribed to `session.deleted` since the epoch, as its owner stores it. */
function endpoint(): { id: string; state: WebhookState } {
  const id = newId('whep')
  const at = new Date().toISOString()
  return {
    id,
    state: {
      endpoint: {
        id,
        type: 'webhook_endpoint',
        url: 'https://hooks.example.test/x',
        event_types: ['session.deleted'],
        status: 'enabled',
        disabled_reason: null,
        created_at: at,
        updated_at: at,
      },
      secret: { kid: 'k1', nonce: '', ct: '' },
      enabled: [[0, null, ['session.deleted']]],
    },
  }
}

/** The deliveries queued for `endpoint`: their events. */
async function queued(endpointId: string): Promise<string[]> {
  const out: string[] = []
  for (let seq = 1; ; ) {
    const m = await jsm.streams
      .getMessage(DELIVERIES_STREAM, { seq, next_by_subj: deliverySubject(endpointId) } as unknown as { seq: number })
      .catch(() => null)
    if (!m) return out
    out.push(m.header.get(EVENT_HEADER))
    seq = m.seq + 1
  }
}

t.test('deliveries with no record a moment on are queued again, once, and only those', async (t) => {
  await ensureOutbox(storage)
  await ensureDeliveriesStream(storage)
  const endpoints = await kvm.create(Buckets.webhooks)
  const records = await kvm.create(RECORDS_BUCKET)
  const [lost, recorded, busy] = [endpoint(), endpoint(), endpoint()]
  for (const e of [lost, recorded, busy]) await endpoints.put(`webhook.${e.id}`, encode(e.state))
  // Something of `busy`'s still waits in the queue, from before the event: it might be the event's own delivery.
  await enqueueDelivery(js, busy.id, newId('whe'), new TextEncoder().encode('{}'))
  const audit = new FanOut({ js, endpoints, positions: await openPositions(kvm, storage), storage, audit: { records, lagMs: 300 }, log })
  await audit.start()
  t.teardown(() => audit.stop())

  const session = newId('sesn')
  const event = webhookEventId('session.deleted', session)
  await records.put(`${recorded.id}.${event}`, encode({ result: 'delivered' }))
  await new Outbox(js).publish('session.deleted', session, Date.now())

  await until('the lost delivery queued again', async () => (await queued(lost.id)).includes(event), 20_000, 100)
  t.pass('the delivery with no record was queued again')
  t.same(await queued(recorded.id), [], 'one with a record was not')
  t.equal((await queued(busy.id)).length, 1, 'nor one whose endpoint has older deliveries waiting')
  // The older delivery goes (attempted): the audit, which waited, queues the event's.
  const { state } = await jsm.streams.info(DELIVERIES_STREAM)
  const older = await jsm.streams.getMessage(DELIVERIES_STREAM, { seq: state.first_seq, next_by_subj: deliverySubject(busy.id) } as unknown as { seq: number })
  await jsm.streams.deleteMessage(DELIVERIES_STREAM, older!.seq)
  await until('the waiting one queued again too', async () => (await queued(busy.id)).includes(event), 20_000, 100)
  t.same(await queued(lost.id), [event], 'queued again once')
})
