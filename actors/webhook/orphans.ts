import type { JetStreamClient, JetStreamManager, StoredMsg } from '@nats-io/jetstream'
import { headers as natsHeaders } from '@nats-io/nats-core'
import type { Logger } from 'pino'
import { deleteSequences, every, type Loop } from '../kit/index.js'

/** What the sweeper needs of the deliveries stream (deliveries.ts owns it). */
export interface DeliveriesQueue {
  stream: string
  consumer: string
  /** The subjects of every delivery (`troupe.webhook.delivery.>`). */
  subjects: string
  /** The header naming a delivery's event. */
  eventHeader: string
}

/** Header of a delivery queued again by the sweeper: the stream sequence it was stranded at. */
export const REQUEUED_HEADER = 'Troupe-Webhook-Requeued'

const SWEEP_EVERY_MS = 5_000
/**
 * A message must be seen stranded this long before it is queued again: an acknowledgement moves the consumer's floor
 * a moment before the work queue removes the message.
 */
const CONFIRM_MS = 10_000
/** Messages looked at per pass. */
const BATCH = 200

export interface OrphanSweeperOptions {
  js: JetStreamClient
  jsm: JetStreamManager
  queue: DeliveriesQueue
  log: Logger
  /** Default 5 s. */
  everyMs?: number
  /** Default 10 s. */
  confirmMs?: number
}

/**
 * Finds deliveries the consumer will never hand out again, and queues each again. In a work queue a message goes when
 * its consumer acknowledges it, so one still stored at or below the consumer's acknowledgement floor is stranded:
 * nats-server 2.9.10, after a consumer leader change, moves the new leader past messages the old one handed out
 * without the cluster knowing (an acknowledgement of a later message does it), and they are neither redelivered nor
 * removed (a chaos run saw the stream keep messages from 132 to 2311 its consumer counted acknowledged). Each is
 * published again as it was (a new sequence the consumer hands out; `Nats-Msg-Id` from the old sequence, so sweepers
 * of several orchestrators queue it once), then deleted by sequence. Some were delivered and their removal was what
 * got lost: those are delivered again, which at-least-once allows (receivers deduplicate on `webhook-id`).
 */
export class OrphanSweeper {
  /** Stranded messages seen, by sequence: when first seen (epoch ms). */
  private readonly seen = new Map<number, number>()
  private loop: Loop | undefined

  constructor(private readonly o: OrphanSweeperOptions) {}

  start(): void {
    this.loop = every(
      this.o.everyMs ?? SWEEP_EVERY_MS,
      async () => void (await this.pass()),
      (err) => this.o.log.warn({ err }, 'stranded webhook deliveries not looked for this time'),
      { firstAfter: true },
    )
  }

  stop(): Promise<void> {
    return this.loop?.stop() ?? Promise.resolve()
  }

  /** One look: returns how many were queued again. */
  async pass(): Promise<number> {
    const { stream, consumer } = this.o.queue
    const floor = (await this.o.jsm.consumers.info(stream, consumer)).ack_floor.stream_seq
    const { state } = await this.o.jsm.streams.info(stream)
    const stranded: StoredMsg[] = []
    for (let seq = state.first_seq; state.messages > 0 && seq <= floor && stranded.length < BATCH; ) {
      // The next stored message from `seq` on (acknowledged ones between are gone): one request, not one per sequence.
      const m = await this.o.jsm.streams.getMessage(stream, { seq, next_by_subj: this.o.queue.subjects } as unknown as { seq: number })
      if (!m || m.seq > floor) break
      stranded.push(m)
      seq = m.seq + 1
    }
    const now = Date.now()
    const still = new Set(stranded.map((m) => m.seq))
    for (const seq of this.seen.keys()) if (!still.has(seq)) this.seen.delete(seq)
    let requeued = 0
    for (const m of stranded) {
      const first = this.seen.get(m.seq)
      if (first === undefined) this.seen.set(m.seq, now)
      else if (now - first >= (this.o.confirmMs ?? CONFIRM_MS)) {
        await this.requeue(m)
        this.seen.delete(m.seq)
        requeued++
      }
    }
    return requeued
  }

  private async requeue(m: StoredMsg): Promise<void> {
    const event = m.header?.get(this.o.queue.eventHeader) ?? ''
    const h = natsHeaders()
    h.set(this.o.queue.eventHeader, event)
    h.set(REQUEUED_HEADER, String(m.seq))
    await this.o.js.publish(m.subject, m.data, { msgID: `${event}.${m.subject}.${m.seq}`, headers: h })
    await deleteSequences(this.o.jsm, this.o.queue.stream, [m.seq])
    this.o.log.warn({ subject: m.subject, event, seq: m.seq }, 'a webhook delivery stranded by the deliveries consumer was queued again')
  }
}
