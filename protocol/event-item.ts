import type { Msg, MsgHdrs } from '@nats-io/transport-node'
import { EventHeaders } from './events.js'

/**
 * One event of a session's event stream as the SSE tail handles it, whether it came from a JetStream read or from
 * the live subject. Copied out of the NATS message at once, so it can wait in a queue. A message that stores several
 * events (protocol/events.ts) gives one item per event, in order, sharing its `seq`.
 */
export interface EventItem {
  /** `Troupe-Type`: the SSE `event:` name; `_…` types are internal records. */
  type: string | undefined
  /** `Troupe-Event-Id`: the SSE `id:` line. */
  id: string | undefined
  /** Stream sequence: set for stored events (read, or republished with `Nats-Sequence`), absent for stream-only ones. */
  seq: number | undefined
  /** The event's place in its message (0 for a message of one event). */
  part: number
  /** The message's last event (true for a message of one event): the whole message is handled once it is. */
  last: boolean
  /** Republish's `Nats-Last-Sequence`: the previous stored message on the same subject (0: none). Live only. */
  prevSeq: number | undefined
  /** `Troupe-Delta-Of` of an `event_start`/`event_delta` preview. */
  deltaOf: string | undefined
  /** The payload: the event's JSON exactly as stored. */
  json: string
  /** `Troupe-Processed`: client event ids this stored event marks as handled (the first part's, in a batch). */
  processed: string[] | undefined
  /** `Troupe-Request` of a stored client event (read from the stream only; live tails have no use for it). */
  request?: string
  /** The thread whose subject holds it (`primary`, or a child's `sthr_` id); set on reads of the stream. */
  thread?: string
}

/**
 * A place in a session's history: a stored message's stream sequence and an event's part in it. A message's last
 * part is at `END`, so "through this event" and "through this whole message" are one position.
 */
export interface Position {
  seq: number
  part: number
}

/** The part of a position past every event of its message. */
export const END = Number.MAX_SAFE_INTEGER

/** Past every event of message `seq`. */
export const endOf = (seq: number): Position => ({ seq, part: END })

/** Where a stored item sits (its `seq` must be set). */
export const positionOf = (item: Pick<EventItem, 'seq' | 'part' | 'last'>): Position => ({ seq: item.seq!, part: item.last ? END : item.part })

/** Negative, zero or positive as `a` is before, at or after `b`. */
export const comparePositions = (a: Position, b: Position): number => a.seq - b.seq || Math.sign(a.part - b.part)

/** True when the stored item sits after `p`. */
export const isAfter = (item: Pick<EventItem, 'seq' | 'part' | 'last'>, p: Position): boolean => comparePositions(positionOf(item), p) > 0

/** Where a read of a session's stored events starts. */
export type ReadFrom = { seq: number } | { time: Date } | 'all'

/**
 * Reads a session's stored events (all threads) in stream order, until nothing is pending. The reads themselves
 * are the session kind's (actors/session/log/event-reader.ts); the gateway is handed one as a function.
 */
export interface EventReader {
  /** The next stored event, or null once the read caught up with what the stream held (or was closed). */
  next(): Promise<EventItem | null>
  /** Stops the read and deletes the server-side consumer. Idempotent; a pending `next()` resolves null. */
  close(): void
}

const ids = (v: string | undefined) => (v ? v.split(',') : undefined)

const num = (v: string | undefined): number | undefined => {
  if (v === undefined || v === '') return undefined
  const n = Number(v)
  return Number.isSafeInteger(n) && n >= 0 ? n : undefined
}

/**
 * A message on `troupe.live.<sid>.<thread>`: a republished stored message (has `Nats-Sequence`), split into its
 * events, or a stream-only one.
 */
export function liveItems(msg: Msg): EventItem[] {
  const h = msg.headers
  return split(h, msg.string(), num(h?.get(EventHeaders.sequence)), num(h?.get('Nats-Last-Sequence')), h?.get(EventHeaders.deltaOf) || undefined)
}

/** A message read from the events stream (a consumer's or a direct get's), split into its events. */
export function storedItems(h: MsgHdrs | undefined, payload: string, seq: number, thread?: string): EventItem[] {
  const items = split(h, payload, seq, undefined, undefined)
  if (thread !== undefined) for (const item of items) item.thread = thread
  return items
}

function split(h: MsgHdrs | undefined, payload: string, seq: number | undefined, prevSeq: number | undefined, deltaOf: string | undefined): EventItem[] {
  const type = h?.get(EventHeaders.type) || undefined
  const id = h?.get(EventHeaders.id) || undefined
  const processed = ids(h?.get(EventHeaders.processed))
  const request = h?.get(EventHeaders.request) || undefined
  if (!h?.get(EventHeaders.parts)) return [{ type, id, seq, part: 0, last: true, prevSeq, deltaOf, json: payload, processed, request }]
  const jsons = payload.split('\n')
  const types = type?.split(',') ?? []
  const eventIds = id?.split(',') ?? []
  return jsons.map((json, part) => ({
    type: types[part] || undefined,
    id: eventIds[part] || undefined,
    seq,
    part,
    last: part === jsons.length - 1,
    prevSeq,
    deltaOf,
    json,
    processed: part === 0 ? processed : undefined,
  }))
}

/** Opens a read of a session's stored events: what the gateway's SSE tail is handed to replay and catch up with. */
/** `thread`: the token of the thread's subject (protocol/ids.ts `threadToken`); default the primary's. */
export type ReadHistory = (sessionId: string, from: ReadFrom, thread?: string) => Promise<EventReader>

/**
 * A session's events fed in-process by its owner, when the owner runs in the gateway's own process (the session
 * kind's, handed to the gateway by the supervisor): a stored message's events once its append is acknowledged, with
 * the positions and `prevSeq` the live subject would carry, and stream-only events as they are published. Nothing
 * goes through NATS on the way, and the gateway holds no subscription while it is fed this way.
 */
export interface LocalTails {
  /**
   * Feeds `listener` the session's events from now on; undefined when the session's owner is not in this process
   * right now (the tail then listens over NATS). `previews`: whether the listener forwards previews.
   */
  tap(sessionId: string, listener: LocalListener, previews: boolean): LocalTap | undefined
}

export interface LocalListener {
  /** One event; the same object goes to every listener of the session: read only. */
  onItem(item: EventItem): void
  /**
   * Nothing more comes this way: the owner left this process (its partition moved), or cannot vouch that every
   * event it stored was fed (an append without an answer). The tail listens over NATS from here on.
   */
  onMoved(): void
}

export interface LocalTap {
  /** Stops feeding this listener. Idempotent. */
  close(): void
}
