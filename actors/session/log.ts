import { headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node'
import { JetStreamApiCodes, JetStreamApiError, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream'
import { unavailable } from '../../protocol/errors.js'
import { EventHeaders, type SessionEvent } from '../../protocol/events.js'
import { readSessionEvents } from '../../protocol/event-reader.js'
import { EVENTS_STREAM, eventsSubject, eventsWildcard, liveSubject } from '../../protocol/subjects.js'

/** JetStream rejected an append because another writer moved the session's subject on: we lost ownership. */
export class FenceLost extends Error {}

const enc = new TextEncoder()

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
  /** Client event ids this record marks as handled. */
  processed: string[] | undefined
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

  /** Stores one event; `processed` names client events it marks as handled. */
  async append(event: SessionEvent | { type: string; [k: string]: unknown }, id?: string, processed?: string[]): Promise<number> {
    const h = natsHeaders()
    h.set(EventHeaders.type, event.type)
    if (id) h.set(EventHeaders.id, id)
    if (processed?.length) h.set(EventHeaders.processed, processed.join(','))
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
 * Reads a session's records in order through `untilSeq` (the last stored sequence when the read began),
 * calling `visit` for each; one ordered consumer, removed when done.
 */
export async function readSession(
  js: JetStreamClient,
  sessionId: string,
  untilSeq: number,
  visit: (rec: Stored) => void,
): Promise<void> {
  if (untilSeq < 1) return
  const reader = await readSessionEvents(js, sessionId, 'all')
  try {
    for (let item = await reader.next(); item && item.seq !== undefined; item = await reader.next()) {
      visit({ seq: item.seq, type: item.type ?? '', event: JSON.parse(item.json), processed: item.processed })
      if (item.seq >= untilSeq) break
    }
  } finally {
    reader.close()
  }
}

/** Removes a session's whole history (session delete). */
export async function purgeSession(jsm: JetStreamManager, sessionId: string): Promise<void> {
  await jsm.streams.purge(EVENTS_STREAM, { filter: eventsWildcard(sessionId) })
}
