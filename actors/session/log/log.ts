import { headers as natsHeaders, TimeoutError, type MsgHdrs, type NatsConnection } from '@nats-io/transport-node'
import { JetStreamApiCodes, JetStreamApiError, PubHeaders, type JetStreamClient, type JetStreamManager, type PubAck } from '@nats-io/jetstream'
import { fail } from '../../../protocol/errors/fail.js'
import { EventHeaders, formatRequestTag, parseRequestTag, type ProcessedRecord, type RequestTag } from '../../../protocol/events.js'
import type { SessionEvent } from '../../../protocol/session-events.js'
import { EVENTS_PREFIX, EVENTS_STREAM, LIVE_PREFIX, eventsSubject, eventsWildcard, liveSubject } from '../../../protocol/subjects.js'
import type { EventItem } from '../../../protocol/event-item.js'
import { readSessionRange } from './event-reader.js'
import type { SessionTails } from './local-tails.js'
import { AppendUncertain, clearSubject, ensureStream, FenceLost, jsPublisher, type Storage } from '../../kit/index.js'

const isTimeout = (err: unknown) => err instanceof TimeoutError || (err instanceof Error && err.cause instanceof TimeoutError)

const enc = new TextEncoder()

/** How long an append waits for its acknowledgement before the actor steps down, unsure whether it was stored. */
const APPEND_TIMEOUT_MS = 5000

/**
 * JetStream's file store reads back no record over 32 MiB (nats-server's `rlBadThresh`, not configurable): a
 * bigger one is stored, then reported corrupt on every read, which would leave the session unreadable.
 */
const STORE_RECORD_MAX = 32 * 1024 * 1024
/** A record's subject, headers and framing around the event's JSON, and the id the event gets, with margin. */
const RECORD_OVERHEAD = 1024

/**
 * Refuses (413) client events that could not all be stored and read back whole. Called before anything of
 * the request is written, on the events as the client sent them.
 */
export function checkFits(nc: NatsConnection, events: ReadonlyArray<{ type: string }>): void {
  const limit = Math.min(STORE_RECORD_MAX, nc.info?.max_payload ?? STORE_RECORD_MAX) - RECORD_OVERHEAD
  events.forEach((e, i) => {
    const json = JSON.stringify(e)
    // UTF-8 takes one to three bytes per UTF-16 unit: most events need no byte count.
    if (json.length * 3 <= limit) return
    const size = Buffer.byteLength(json)
    if (size > limit) throw fail('event_too_large', i, e.type, size, limit)
  })
}

/** Creates (or updates to) the one events stream: a subject per session thread, republished for live tails. */
export async function ensureEventsStream(storage: Storage): Promise<void> {
  await ensureStream(storage, 'events stream', {
    name: EVENTS_STREAM,
    subjects: [`${EVENTS_PREFIX}.>`],
    // Stored events are re-sent, with their stream sequence, to troupe.live.<sid>.<thread> for SSE tails.
    republish: { src: `${EVENTS_PREFIX}.>`, dest: `${LIVE_PREFIX}.>` },
    // A publish retried after a lost ack is dropped by its Nats-Msg-Id (the event id) within this window.
    duplicate_window: 120_000_000_000,
    allow_direct: true,
  })
}

/** One stored record of a session, as read back. */
export interface Stored {
  seq: number
  type: string
  /** The event (or internal record) exactly as stored. */
  event: SessionEvent | ProcessedRecord
  /** Client event ids this record marks as handled. */
  processed: string[] | undefined
  /** The POST that stored this client event. */
  request: RequestTag | undefined
  /** The thread whose subject holds it: `primary`, or a child's id. */
  thread: string
}

/** What an append carries beside the event. */
export interface AppendOptions {
  /** The event id: the message's dedupe id and `Troupe-Event-Id`. */
  id?: string
  /** Client events this record marks as handled. */
  processed?: string[]
  /** A client event: the POST that stored it. */
  request?: RequestTag
  /** The message's dedupe id when it is not the event id: a copy of an event stored on another subject (a cross-post). */
  msgId?: string
}

/**
 * The append side of one session's history. Every append names the subject's last sequence it expects
 * (`Nats-Expected-Last-Subject-Sequence`), so a host that lost the session without noticing
 * cannot write after the new owner: its append fails and it steps down.
 */
export class EventLog {
  constructor(
    private readonly nc: NatsConnection,
    readonly sessionId: string,
    /** Stream sequence of the last record on this session's primary subject (0: none). */
    public lastSeq: number,
    /** Throws once this host may no longer write for the session (`Mailbox.checkServing`); called before every append. */
    private readonly checkServing: () => void = () => undefined,
    /** This process's SSE tails, fed what is stored and published here (none: tails listen over NATS only). */
    private readonly tails?: SessionTails,
    /** The thread whose subject this log appends to: `primary`, or a child thread's id. */
    readonly thread = 'primary',
  ) {}

  /** Stores one event (or internal record). */
  async append(event: SessionEvent | ProcessedRecord, opts: AppendOptions = {}): Promise<number> {
    return this.publishOne(event.type, JSON.stringify(event), opts)
  }

  /**
   * Stores service events as one message (protocol/events.ts): one append, one fence, one acknowledgement for all.
   * `processed` is marked by the first. Each event's JSON must be `JSON.stringify`'s (no line break inside).
   */
  async appendMany(events: ReadonlyArray<{ event: SessionEvent; json: string }>, processed: string[]): Promise<number> {
    const first = events[0]!
    // Its JSON is at hand already: not written again.
    if (events.length === 1) return this.publishOne(first.event.type, first.json, { id: first.event.id, processed })
    const h = natsHeaders()
    h.set(EventHeaders.type, events.map((e) => e.event.type).join(','))
    h.set(EventHeaders.id, events.map((e) => e.event.id).join(','))
    h.set(EventHeaders.parts, String(events.length))
    if (processed.length) h.set(EventHeaders.processed, processed.join(','))
    const last = events.length - 1
    return this.publish(h, events.map((e) => e.json).join('\n'), first.event.id, (seq, prevSeq) =>
      events.map((e, part) => storedItem(e.event.type, e.event.id, seq, prevSeq, e.json, part === 0 ? processed : undefined, part, part === last)),
    )
  }

  private publishOne(type: string, json: string, { id, processed, request, msgId }: AppendOptions): Promise<number> {
    const h = natsHeaders()
    h.set(EventHeaders.type, type)
    if (id) h.set(EventHeaders.id, id)
    if (processed?.length) h.set(EventHeaders.processed, processed.join(','))
    if (request) h.set(EventHeaders.request, formatRequestTag(request))
    return this.publish(h, json, msgId ?? id, (seq, prevSeq) => [storedItem(type, id, seq, prevSeq, json, processed, 0, true)])
  }

  /** `items`: the stored message's events as a live tail gets them, for this process's tails. */
  private async publish(h: MsgHdrs, json: string, id: string | undefined, items: (seq: number, prevSeq: number) => EventItem[]): Promise<number> {
    // The sequence fence stops a write after the new owner's first append; this stops one before it, so a host
    // resumed from a pause cannot slip an event in between the new owner's replay and its first append.
    this.checkServing()
    if (id) h.set(PubHeaders.MsgIdHdr, id)
    h.set(PubHeaders.ExpectedLastSubjectSequenceHdr, String(this.lastSeq))
    let ack: PubAck
    try {
      ack = await jsPublisher(this.nc).publish(eventsSubject(this.sessionId, this.thread), enc.encode(json), h, APPEND_TIMEOUT_MS)
    } catch (err) {
      // Stored elsewhere (fenced off), or maybe stored with no answer: this process's tails can no longer rely on
      // being fed every stored message from here, and go over to NATS.
      if (isTimeout(err) || (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamWrongLastSequence)) {
        this.tails?.moved(this.sessionId)
      }
      if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamWrongLastSequence) {
        throw new FenceLost(`session ${this.sessionId} moved on without us (expected last sequence ${this.lastSeq})`)
      }
      // No answer: the event may be stored. The actor steps down and is rebuilt from what the stream holds.
      if (isTimeout(err)) throw new AppendUncertain(`session ${this.sessionId}: no answer to an append (expected last sequence ${this.lastSeq})`)
      throw fail('history_write_failed')
    }
    const prevSeq = this.lastSeq
    this.lastSeq = ack.seq
    // A retried publish the stream dropped as a duplicate was stored (and fed) before: not again.
    if (!ack.duplicate) this.tails?.stored(this.sessionId, () => items(ack.seq, prevSeq))
    return ack.seq
  }

  /** Stream-only message on the live subject (previews, deletion notice): never stored, never replayed. */
  notify(type: string, payload: unknown, deltaOf?: string): void {
    const json = JSON.stringify(payload)
    this.tails?.streamOnly(
      this.sessionId,
      { type, id: undefined, seq: undefined, part: 0, last: true, prevSeq: undefined, deltaOf, json, processed: undefined },
      !!deltaOf,
    )
    // Previews nobody outside this process can want are not published: three or more messages per model response.
    if (deltaOf && this.tails && !this.tails.previewsOverNats(this.sessionId)) return
    const h = natsHeaders()
    h.set(EventHeaders.type, type)
    if (deltaOf) h.set(EventHeaders.deltaOf, deltaOf)
    this.nc.publish(liveSubject(this.sessionId, this.thread), enc.encode(json), { headers: h })
  }
}

/** One event of a stored message as a live tail gets it (protocol/event-item.ts `liveItems`, without NATS). */
function storedItem(
  type: string,
  id: string | undefined,
  seq: number,
  prevSeq: number,
  json: string,
  processed: string[] | undefined,
  part: number,
  last: boolean,
): EventItem {
  return { type, id, seq, part, last, prevSeq, deltaOf: undefined, json, processed: processed?.length ? processed : undefined }
}

/** The stream sequence of the last record of a session's `thread` (default: of any of its threads), 0 when none. */
export async function lastSequence(jsm: JetStreamManager, sessionId: string, thread?: string): Promise<number> {
  try {
    const subject = thread === undefined ? eventsWildcard(sessionId) : eventsSubject(sessionId, thread)
    const m = await jsm.streams.getMessage(EVENTS_STREAM, { last_by_subj: subject })
    return m?.seq ?? 0
  } catch (err) {
    if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.NoMessageFound) return 0
    throw err
  }
}

/**
 * A replay reads a whole history through a consumer from the start (falling back to direct gets only when none can
 * be created): one direct get per record was most of a takeover's time on a busy machine (a 60-record history
 * took 1–3 s at tens of milliseconds a round trip, where a consumer delivers it in one or two).
 */
const REPLAY_DIRECT_READS = 0

/**
 * Reads a session's records in order through `untilSeq` (the last stored sequence when the read began, read at
 * the stream's leader), calling `visit` for each. A read served by a replica that is behind ends early; a replay
 * that missed the newest records would rebuild a session that forgot them (a tool result, say) and then write
 * after them, so such a read fails, retryably, rather than end short.
 */
export async function readSession(js: JetStreamClient, sessionId: string, untilSeq: number, visit: (rec: Stored) => void): Promise<void> {
  if (untilSeq < 1) return
  const reader = readSessionRange(js, sessionId, 1, untilSeq, { directReads: REPLAY_DIRECT_READS })
  let last = 0
  try {
    for (let item = await reader.next(); item && item.seq !== undefined; item = await reader.next()) {
      visit({
        seq: item.seq,
        type: item.type ?? '',
        event: JSON.parse(item.json),
        processed: item.processed,
        request: parseRequestTag(item.request),
        thread: item.thread ?? 'primary',
      })
      last = item.seq
    }
  } finally {
    reader.close()
  }
  if (last < untilSeq) {
    throw fail('history_behind', sessionId, last, untilSeq)
  }
}

/**
 * Removes a session's whole history (session delete), message by message: a subject purge of the replicated events
 * stream can leave its replicas unlike, a replica losing other sessions' events too (kit/sequence-deletes.ts).
 */
export async function deleteSessionHistory(jsm: JetStreamManager, sessionId: string): Promise<void> {
  await clearSubject(jsm, EVENTS_STREAM, eventsWildcard(sessionId))
}
