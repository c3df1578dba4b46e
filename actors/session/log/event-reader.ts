import { AckPolicy, DeliverPolicy, type Consumer, type ConsumerConfig, type ConsumerMessages, type JetStreamClient, type JsMsg } from '@nats-io/jetstream'
import { fail } from '../../../protocol/errors/fail.js'
import { storedItems, type EventItem, type EventReader, type ReadFrom } from '../../../protocol/event-item.js'
import { isTransientNatsError } from '../../kit/index.js'
import { EVENTS_STREAM, eventsSubject, eventsWildcard, threadOf } from '../../../protocol/subjects.js'

/**
 * Reads of a session's stored events from `TROUPE_EVENTS`: the replays and pages of the session kind, and (handed
 * to the gateway by the supervisor as `readHistory`) the SSE tail's replay and catch-up.
 */

/** A read that says messages are pending but delivers none for this long (history purged under it) fails. */
const STALL_MS = 10_000
/** Messages asked of the server per pull. */
const BATCH = 256
const NANOS_PER_MS = 1_000_000

export interface ReadOptions {
  /** Fail a read that delivers nothing for this long while messages are pending. Default 10 s. */
  stallMs?: number
  /** Messages per pull; a short read asks for about what it needs. Default 256. */
  batch?: number
  /** Records a range read takes one direct get at a time before it goes on through a consumer. Default DIRECT_READS. */
  directReads?: number
  /**
   * A range read: a sequence known to hold one of the session's messages (its last when the request came). A read whose
   * consumer ends before passing `until` while that lies beyond it, or before reaching it, ended short (its consumer
   * sat on a replica that is behind): it fails with 503 `history_behind` rather than answer a short range.
   */
  through?: number
  /** One thread's events (`primary`, or a child's id), checked by the caller; default every thread's (a replay). */
  thread?: string
}

const filterOf = (sessionId: string, opts: ReadOptions) => (opts.thread === undefined ? eventsWildcard(sessionId) : eventsSubject(sessionId, opts.thread))

/**
 * An ephemeral consumer (in memory, unacknowledged, removed when done or after 30 s unused) filtered on the
 * session's subjects, created with one API call (no stream lookup first). One filter subject only:
 * nats-server 2.9 has no `filter_subjects`.
 */
export async function readSessionEvents(js: JetStreamClient, sessionId: string, from: ReadFrom, opts: ReadOptions = {}): Promise<EventReader> {
  const stallMs = opts.stallMs ?? STALL_MS
  const config: Partial<ConsumerConfig> = {
    filter_subject: filterOf(sessionId, opts),
    ack_policy: AckPolicy.None,
    mem_storage: true,
    num_replicas: 1,
    inactive_threshold: 30_000 * NANOS_PER_MS,
  }
  if (from === 'all') config.deliver_policy = DeliverPolicy.All
  else if ('seq' in from) Object.assign(config, { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: Math.max(1, from.seq) })
  else Object.assign(config, { deliver_policy: DeliverPolicy.StartTime, opt_start_time: from.time.toISOString() })
  const jsm = await js.jetstreamManager(false)
  const info = await jsm.consumers.add(EVENTS_STREAM, config)
  const consumer: Consumer = js.consumers.getConsumerFromInfo(info)
  let closed = false
  let messages: ConsumerMessages | undefined
  let iter: AsyncIterator<JsMsg> | undefined
  // Pending after the last message handed out; the consumer's count at creation before the first.
  let pending = info.num_pending
  // The rest of a message that holds several events, handed out before the next message is read.
  const parts: EventItem[] = []
  // One timer for the whole read, re-armed per message (a timer per message cost more than the read itself).
  let stall: ((err: unknown) => void) | undefined
  const timer = setTimeout(() => stall?.(fail('history_read_stalled')), stallMs)
  timer.unref()
  const close = () => {
    if (closed) return
    closed = true
    clearTimeout(timer)
    messages?.stop()
    consumer.delete().catch(() => undefined)
  }
  return {
    async next() {
      if (closed) return null
      if (parts.length) return parts.shift()!
      if (pending === 0) return null
      if (!iter) {
        messages = await consumer.consume({ max_messages: Math.min(opts.batch ?? BATCH, pending) })
        if (closed) {
          messages.stop()
          return null
        }
        iter = messages[Symbol.asyncIterator]()
      }
      timer.refresh()
      let r: IteratorResult<JsMsg>
      try {
        r = await new Promise<IteratorResult<JsMsg>>((resolve, reject) => {
          stall = reject
          iter!.next().then(resolve, reject)
        })
      } catch (err) {
        close()
        throw err
      } finally {
        stall = undefined
      }
      if (closed || r.done) return null
      pending = r.value.info.pending
      parts.push(...storedItems(r.value.headers, r.value.string(), r.value.seq, threadOf(r.value.subject)))
      return parts.shift()!
    },
    close,
  }
}

/** Records a range read takes one direct get at a time before it goes on through a consumer (pages). */
export const DIRECT_READS = 64

/**
 * Reads a session's stored messages from sequence `from` through `until`, a sequence the caller knows is stored
 * (the subject's last when it asked). The first `directReads` come one direct get at a time (`next_by_subj`),
 * answered by any replica and needing no consumer: creating one is a proposal to the cluster's meta leader, and an
 * impossible one while it elects a new leader. A longer read goes on through a consumer, which takes hundreds of
 * records per round trip where a direct get takes one (on a busy machine a round trip costs tens of milliseconds);
 * when none can be created for the moment, direct gets read the rest. One whose replica is behind `until` (it
 * answers "no message" before reaching it) goes on through a consumer too; but the server puts an R1 consumer on any
 * of the stream's replicas, not on its leader, so a consumer's read may end short as well: a caller that must reach
 * `until` checks that it did (`readSession`).
 */
export function readSessionRange(js: JetStreamClient, sessionId: string, from: number, until: number, opts: ReadOptions = {}): EventReader {
  const filter = filterOf(sessionId, opts)
  const directReads = opts.directReads ?? DIRECT_READS
  let cursor = Math.max(1, from)
  let direct = 0
  let inner: EventReader | undefined
  /** No consumer could be created (no meta leader): direct gets read the rest. */
  let directOnly = false
  /** A direct get answered "no message" short of `until`: its replica is behind, only the leader can go on. */
  let behind = false
  let closed = false
  /** The rest of a message read by a direct get that holds several events. */
  const parts: EventItem[] = []
  const next = async (): Promise<EventItem | null> => {
    if (closed) return null
    if (parts.length) return parts.shift()!
    if (cursor > until) return null
    if (!inner && !behind && (directOnly || direct < directReads)) {
      direct++
      const jsm = await js.jetstreamManager(false)
      const m = await jsm.direct.getMessage(EVENTS_STREAM, { seq: cursor, next_by_subj: filter })
      if (closed) return null
      if (m && m.seq <= until) {
        cursor = m.seq + 1
        parts.push(...storedItems(m.header, m.string(), m.seq, threadOf(m.subject)))
        return parts.shift()!
      }
      if (m) {
        // The next message is past `until`: the range is read.
        cursor = until + 1
        return null
      }
      behind = true
    }
    if (!inner) {
      try {
        inner = await readSessionEvents(js, sessionId, { seq: cursor }, opts)
      } catch (err) {
        if (behind || !isTransientNatsError(err)) throw err
        directOnly = true
        return next()
      }
      if (closed) inner.close()
    }
    const item = await inner.next()
    if (!item) {
      const { through } = opts
      if (through !== undefined && (through > until || cursor <= through)) throw fail('history_behind', sessionId, cursor - 1, through)
      return null
    }
    if (item.seq === undefined || item.seq > until) return null
    // The rest of a message of several events comes from the consumer next: the message is read once it has.
    cursor = item.last ? item.seq + 1 : item.seq
    return item
  }
  return {
    next,
    close() {
      closed = true
      inner?.close()
    },
  }
}
