import { DeliverPolicy, type Consumer, type ConsumerMessages, type JetStreamClient, type JsMsg, type OrderedConsumerOptions } from '@nats-io/jetstream'
import type { Msg } from '@nats-io/transport-node'
import { unavailable } from './errors.js'
import { EventHeaders } from './events.js'
import { EVENTS_STREAM, eventsWildcard } from './subjects.js'

/**
 * One message of a session's event stream as the SSE tail handles it, whether it came from a JetStream read or
 * from the live subject. Copied out of the NATS message at once, so it can wait in a queue.
 */
export interface EventItem {
  /** `Troupe-Type`: the SSE `event:` name; `_…` types are internal records. */
  type: string | undefined
  /** `Troupe-Event-Id`: the SSE `id:` line. */
  id: string | undefined
  /** Stream sequence: set for stored events (read, or republished with `Nats-Sequence`), absent for stream-only ones. */
  seq: number | undefined
  /** Republish's `Nats-Last-Sequence`: the previous stored message on the same subject (0: none). Live only. */
  prevSeq: number | undefined
  /** `Troupe-Delta-Of` of an `event_start`/`event_delta` preview. */
  deltaOf: string | undefined
  /** The payload: the event's JSON exactly as stored. */
  json: string
  /** `Troupe-Processed`: client event ids this stored event marks as handled. */
  processed: string[] | undefined
}

const ids = (v: string | undefined) => (v ? v.split(',') : undefined)

const num = (v: string | undefined): number | undefined => {
  if (v === undefined || v === '') return undefined
  const n = Number(v)
  return Number.isSafeInteger(n) && n >= 0 ? n : undefined
}

/** A message on `troupe.live.<sid>.<thread>`: republished stored event (has `Nats-Sequence`) or stream-only. */
export function liveItem(msg: Msg): EventItem {
  const h = msg.headers
  return {
    type: h?.get(EventHeaders.type) || undefined,
    id: h?.get(EventHeaders.id) || undefined,
    seq: num(h?.get(EventHeaders.sequence)),
    prevSeq: num(h?.get('Nats-Last-Sequence')),
    deltaOf: h?.get(EventHeaders.deltaOf) || undefined,
    json: msg.string(),
    processed: ids(h?.get(EventHeaders.processed)),
  }
}

function storedItem(m: JsMsg): EventItem {
  const h = m.headers
  return {
    type: h?.get(EventHeaders.type) || undefined,
    id: h?.get(EventHeaders.id) || undefined,
    seq: m.seq,
    prevSeq: undefined,
    deltaOf: undefined,
    json: m.string(),
    processed: ids(h?.get(EventHeaders.processed)),
  }
}

/** Where a read of a session's stored events starts. */
export type ReadFrom = { seq: number } | { time: Date } | 'all'

/** Reads a session's stored messages (all threads) in stream order, until nothing is pending. */
export interface EventReader {
  /** The next stored message, or null once the read caught up with what the stream held (or was closed). */
  next(): Promise<EventItem | null>
  /** Stops the read and deletes the server-side consumer. Idempotent; a pending `next()` resolves null. */
  close(): void
}

/** A read that says messages are pending but delivers none for this long (history purged under it) fails. */
const STALL_MS = 10_000

/**
 * An ordered (ephemeral, in-memory, unacknowledged) consumer filtered on the session's subjects. One filter
 * subject only: nats-server 2.9 has no `filter_subjects`.
 */
export async function readSessionEvents(js: JetStreamClient, sessionId: string, from: ReadFrom, stallMs = STALL_MS): Promise<EventReader> {
  const opts: Partial<OrderedConsumerOptions> = { filter_subjects: eventsWildcard(sessionId), inactive_threshold: 30_000 }
  if (from === 'all') opts.deliver_policy = DeliverPolicy.All
  else if ('seq' in from) opts.opt_start_seq = Math.max(1, from.seq)
  else opts.opt_start_time = from.time.toISOString()
  const consumer: Consumer = await js.consumers.get(EVENTS_STREAM, opts)
  let closed = false
  let messages: ConsumerMessages | undefined
  let iter: AsyncIterator<JsMsg> | undefined
  // Pending after the last message handed out; the consumer's count at creation before the first.
  let pending = (await consumer.info(true)).num_pending
  const close = () => {
    if (closed) return
    closed = true
    messages?.stop()
    consumer.delete().catch(() => undefined)
  }
  return {
    async next() {
      if (closed || pending === 0) return null
      if (!iter) {
        messages = await consumer.consume({ max_messages: 256 })
        if (closed) {
          messages.stop()
          return null
        }
        iter = messages[Symbol.asyncIterator]()
      }
      let timer: NodeJS.Timeout | undefined
      const stalled = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(unavailable('Reading the session history stalled; retry shortly', 1000)), stallMs)
      })
      let r: IteratorResult<JsMsg>
      try {
        r = await Promise.race([iter.next(), stalled])
      } catch (err) {
        close()
        throw err
      } finally {
        clearTimeout(timer)
      }
      if (closed || r.done) return null
      pending = r.value.info.pending
      return storedItem(r.value)
    },
    close,
  }
}
