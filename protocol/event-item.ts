import type { Msg, MsgHdrs } from '@nats-io/transport-node'
import { EventHeaders } from './events.js'

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
  /** `Troupe-Request` of a stored client event (read from the stream only; live tails have no use for it). */
  request?: string
}

/** Where a read of a session's stored events starts. */
export type ReadFrom = { seq: number } | { time: Date } | 'all'

/**
 * Reads a session's stored messages (all threads) in stream order, until nothing is pending. The reads themselves
 * are the session kind's (actors/session/event-reader.ts); the gateway is handed one as a function.
 */
export interface EventReader {
  /** The next stored message, or null once the read caught up with what the stream held (or was closed). */
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

/** A message read from the events stream (a consumer's or a direct get's): its headers, payload and sequence. */
export function storedItem(h: MsgHdrs | undefined, json: string, seq: number): EventItem {
  return {
    type: h?.get(EventHeaders.type) || undefined,
    id: h?.get(EventHeaders.id) || undefined,
    seq,
    prevSeq: undefined,
    deltaOf: undefined,
    json,
    processed: ids(h?.get(EventHeaders.processed)),
    request: h?.get(EventHeaders.request) || undefined,
  }
}

/** Opens a read of a session's stored events: what the gateway's SSE tail is handed to replay and catch up with. */
export type ReadHistory = (sessionId: string, from: ReadFrom) => Promise<EventReader>
