import { headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node'
import { DeliverPolicy, JetStreamApiCodes, JetStreamApiError, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream'
import { unavailable } from '../../protocol/errors.js'
import { EventHeaders, type SessionEvent } from '../../protocol/events.js'
import { EVENTS_STREAM, eventsSubject, eventsWildcard, liveSubject } from '../../protocol/subjects.js'

/** JetStream rejected an append because another writer moved the session's subject on: we lost ownership. */
export class FenceLost extends Error {}

const enc = new TextEncoder()
const dec = new TextDecoder()

/** Creates (or updates to) the one events stream: a subject per session thread, republished for live tails. */
export async function ensureEventsStream(jsm: JetStreamManager): Promise<void> {
  const config = {
    name: EVENTS_STREAM,
    subjects: ['troupe.events.>'],
    // Stored events are re-sent, with their stream sequence, to troupe.live.<sid>.<thread> for SSE tails.
    republish: { src: 'troupe.events.>', dest: 'troupe.live.>' },
    // A publish retried after a lost ack is dropped by its Nats-Msg-Id (the event id) within this window.
    duplicate_window: 120_000_000_000,
    allow_direct: true,
  }
  try {
    await jsm.streams.info(EVENTS_STREAM)
    await jsm.streams.update(EVENTS_STREAM, config)
  } catch (err) {
    if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound) {
      await jsm.streams.add(config)
      return
    }
    throw err
  }
}

/** One stored record of a session, as read back. */
export interface Stored {
  seq: number
  type: string
  /** The event (or internal record) exactly as stored. */
  event: SessionEvent
}

/**
 * The append side of one session's history. Every append names the subject's last sequence it expects
 * (`Nats-Expected-Last-Subject-Sequence`), so a host that lost the session's partition without noticing
 * cannot write after the new owner: its append fails and it steps down.
 */
export class EventLog {
  constructor(
    private readonly js: JetStreamClient,
    private readonly nc: NatsConnection,
    readonly sessionId: string,
    /** Stream sequence of the last record on this session's primary subject (0: none). */
    public lastSeq: number,
  ) {}

  async append(event: SessionEvent | { type: string; [k: string]: unknown }, id?: string): Promise<number> {
    const h = natsHeaders()
    h.set(EventHeaders.type, event.type)
    if (id) h.set(EventHeaders.id, id)
    let ack
    try {
      ack = await this.js.publish(eventsSubject(this.sessionId), enc.encode(JSON.stringify(event)), {
        headers: h,
        msgID: id,
        expect: { lastSubjectSequence: this.lastSeq },
        timeout: 5000,
      })
    } catch (err) {
      if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamWrongLastSequence) {
        throw new FenceLost(`session ${this.sessionId} moved on without us (expected last sequence ${this.lastSeq})`)
      }
      throw unavailable('The session history could not be written; retry shortly', 1000)
    }
    this.lastSeq = ack.seq
    return ack.seq
  }

  /** Stream-only message on the live subject (previews, deletion notice): never stored, never replayed. */
  notify(type: string, payload: unknown, deltaOf?: string): void {
    const h = natsHeaders()
    h.set(EventHeaders.type, type)
    if (deltaOf) h.set(EventHeaders.deltaOf, deltaOf)
    this.nc.publish(liveSubject(this.sessionId), enc.encode(JSON.stringify(payload)), { headers: h })
  }
}

/** The stream sequence of a session's last stored record, 0 when it has none. */
export async function lastSequence(jsm: JetStreamManager, sessionId: string): Promise<number> {
  try {
    const m = await jsm.streams.getMessage(EVENTS_STREAM, { last_by_subj: eventsSubject(sessionId) })
    return m?.seq ?? 0
  } catch (err) {
    if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.NoMessageFound) return 0
    throw err
  }
}

/**
 * Reads a session's records in order from `fromSeq` (inclusive) through `untilSeq`, calling `visit` for each;
 * `visit` returns false to stop early. One ordered consumer, removed when done.
 */
export async function readSession(
  js: JetStreamClient,
  sessionId: string,
  fromSeq: number,
  untilSeq: number,
  visit: (rec: Stored) => boolean | void,
): Promise<void> {
  if (untilSeq < Math.max(1, fromSeq)) return
  const consumer = await js.consumers.get(EVENTS_STREAM, {
    filter_subjects: eventsWildcard(sessionId),
    ...(fromSeq > 1 ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: fromSeq } : { deliver_policy: DeliverPolicy.All }),
  })
  const it = await consumer.consume({ max_messages: 512 })
  try {
    for await (const m of it) {
      const type = m.headers?.get(EventHeaders.type) ?? ''
      const go = visit({ seq: m.seq, type, event: JSON.parse(dec.decode(m.data)) })
      if (go === false || m.seq >= untilSeq || m.info.pending === 0) break
    }
  } finally {
    it.stop()
  }
}

/** Removes a session's whole history (session delete). */
export async function purgeSession(jsm: JetStreamManager, sessionId: string): Promise<void> {
  await jsm.streams.purge(EVENTS_STREAM, { filter: eventsWildcard(sessionId) })
}
