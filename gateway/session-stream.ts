import type { NatsConnection } from '@nats-io/transport-node'
import type { Logger } from 'pino'
import { decodeTime } from 'ulid'
import { isApiError } from '../protocol/errors/api-error.js'
import { toEnvelope } from '../protocol/errors/envelope.js'
import { fail } from '../protocol/errors/fail.js'
import { isInternalType, type StreamOpenReply } from '../protocol/events.js'
import { threadToken } from '../protocol/ids.js'
import type { Route } from '../protocol/routes/index.js'
import { dispatch } from './dispatch.js'
import {
  comparePositions,
  END,
  endOf,
  isAfter,
  positionOf,
  type EventItem,
  type EventReader,
  type LocalTap,
  type Position,
  type ReadFrom,
} from '../protocol/event-item.js'
import type { ActorAccess } from './types.js'
import { sendHead, type ResponseState } from './http.js'
import { createLiveSubscriptions, type LiveMembership, type LiveSubscriptions } from './live-subscriptions.js'
import { formatSseRaw, sseHeaders, startSse, type SseStream } from './sse.js'
import type { Exchange } from './transport.js'

/**
 * The SSE tail of a session (`GET /v1/sessions/{id}/events/stream`, WIRE.md §7.3, DECISIONS.md "Sessions and
 * events"): optional replay after an event id, then live, with no gap and no duplicate between the two.
 *
 *   1. Listen, buffering. When the session's owner runs in this process (`ActorAccess.localTails`), it feeds the
 *      tail directly: each stored message once its append is acknowledged, previews and the deletion notice as they
 *      are published. Otherwise on `troupe.live.<sid>.>`: the stream's RePublish puts every stored event there (with
 *      `Nats-Sequence`); the session actor core-publishes previews and the deletion notice there. The gateway has
 *      one subscription per session, shared by its tails (gateway/live-subscriptions.ts): the first tail subscribes
 *      and flushes, later ones wait for that flush if it is still under way.
 *   2. Ask the owner `stream.open` → `last_seq`, the stream sequence of the session's last stored message (404
 *      for an unknown session: a JSON error, no SSE).
 *   3. With `?after=` or `Last-Event-ID`: find that event with an ordered consumer (400 before any SSE if it is not
 *      in the session), then send what follows it up to `last_seq`.
 *   4. Go live: forward stored events whose position (a message's sequence, and the event's part in it when it
 *      holds several) is past the last one handled (`cursor`), stream-only ones as they come. A republished
 *      message names the previous stored message of its subject (`Nats-Last-Sequence`); if that is past `cursor`,
 *      something was missed (dropped by a slow connection, or a `last_seq` that lagged a publish in flight) and is
 *      read back from the stream before going on.
 *   5. A tail fed in-process whose owner leaves (its partition moves, an append gets no answer) goes over to NATS:
 *      it subscribes, asks the owner for `last_seq` again, reads back what was stored after `cursor` through it,
 *      and goes on live from the subscription. A tail over NATS whose connection was lost and is back does the same
 *      (what was published meanwhile is lost, and would be noticed only when its subject gets another message).
 *
 * Every read has a sequence it must reach (`last_seq`, a gap's `Nats-Last-Sequence`, a fresh `last_seq` when moving
 * over to NATS): the server places a read's consumer on any replica of the stream, and one that is behind (a node
 * just back from a partition, catching up) ends the read early as if nothing more were stored. A read that ends
 * short is read again from where it stopped (a new consumer, likely elsewhere) a few times, then the tail fails
 * with a retryable 503 (`history_behind`) rather than skip what it could not read, or answer 400 for an event it
 * could not find.
 *
 * A live message is parsed once for all the tails of its session, and framed once for all that forward it. A HEAD
 * request goes through steps 1–3 (so it answers what the GET would: 404, 400, or the stream's headers) and stops
 * there, with no body.
 */

export interface SessionStreamDeps {
  nc: NatsConnection
  /** Reads of the session's stored events (the session kind's, wired by the supervisor). */
  actors: ActorAccess
  log: Logger
  actorTimeoutMs: number
  /** SSE keepalive comment interval (startSse's default when undefined). */
  keepaliveMs?: number | undefined
}

export interface StreamCall {
  route: Route
  params: Record<string, string>
  /** The route's validated query: `{event_deltas?, after?}`. */
  query: unknown
  rid: string
  headers: Record<string, string>
}

export interface SessionStreams {
  /** Serves one stream request. Throws an ApiError (for the caller's JSON envelope) only before SSE has started. */
  serve(ex: Exchange, state: ResponseState, call: StreamCall): Promise<void>
  /** Ends every open stream: the gateway is closing. */
  closeAll(): void
  /** Streams open right now (waiting for the owner, replaying, or live). */
  readonly size: number
  /** Sessions with a live subscription right now (one per session, shared by its streams). */
  readonly liveSubscriptions: number
}

/** Reads of one range, each ending short of its sequence (a replica behind), before the tail gives up with a 503. */
const SHORT_READS = 4
/** The pause before reading again after a short read. */
const SHORT_READ_PAUSE_MS = 100
/** How far before an event id's mint time the search for it starts reading (clock skew between hosts). */
const ID_TIME_SLACK_MS = 5_000
const PREVIEW_TYPES = new Set(['event_start', 'event_delta'])
const DELETED = 'session.deleted'
/** Previews begun on this stream and not yet final: a delta is only forwarded after its start. */
const MAX_OPEN_PREVIEWS = 256

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

export function createSessionStreams(deps: SessionStreamDeps): SessionStreams {
  const open = new Set<Tail>()
  const subscriptions = createLiveSubscriptions(deps.nc, deps.log)
  return {
    async serve(ex, state, call) {
      const tail = new Tail(deps, subscriptions, call, () => open.delete(tail))
      open.add(tail)
      await tail.run(ex, state)
    },
    closeAll() {
      for (const tail of [...open]) tail.end()
    },
    get size() {
      return open.size
    },
    get liveSubscriptions() {
      return subscriptions.size
    },
  }
}

interface StreamQuery {
  event_deltas?: string | string[]
  after?: string
}

/**
 * A message as a tail handles it. Live ones are the same object for every tail of the session: what is worked out
 * from one is kept on it, so it is done once rather than once per stream.
 */
interface Item extends EventItem {
  /** The SSE message it is sent as: the same bytes on every stream that forwards it. */
  frame?: Uint8Array
  /** A preview's event (`event.id` of a start, `event_id` of a delta); '' when it names none, null if not JSON. */
  previewOf?: string | null
}

class Tail {
  private readonly sid: string
  private readonly deltas: Set<string>
  /** Fed in-process by the session's owner (step 1); undefined once it is not. */
  private tap: LocalTap | undefined
  /** Listening over NATS. */
  private membership: LiveMembership | undefined
  /** The in-process feed stopped: the tail goes over to NATS when it goes live (or at once if it is). */
  private moved = false
  /** The NATS connection came back while the tail was not live: it reads back what it may have missed first. */
  private resumed = false
  private sse: SseStream | undefined
  /** The JetStream read in progress, if any: closed when the tail ends or the session is deleted. */
  private reader: EventReader | undefined
  private readonly queue: Item[] = []
  private live = false
  private pumping = false
  /** The pump's last run: settled once it stopped. */
  private pumped: Promise<void> = Promise.resolve()
  private ended = false
  private deletedSeen = false
  /** The last stored event handled (sent, or deliberately skipped as already known to the client). */
  /** The thread tailed: the token of its subject (`primary`, or a child's id). */
  private readonly thread: string
  private cursor: Position = endOf(0)
  private readonly previews = new Set<string>()

  constructor(
    private readonly deps: SessionStreamDeps,
    private readonly subscriptions: LiveSubscriptions,
    private readonly call: StreamCall,
    private readonly onEnd: () => void,
  ) {
    const sid = call.params[call.route.op.id.param]
    if (!sid) throw fail('internal', `stream route ${call.route.path} has no session key`)
    this.sid = sid
    // A thread's stream (WIRE §8) tails its own subject; the session's, its primary thread's.
    const sub = call.route.op.sub && call.params[call.route.op.sub.param]
    this.thread = sub ? threadToken(sid, sub) : 'primary'
    const q = (call.query ?? {}) as StreamQuery
    this.deltas = new Set(q.event_deltas === undefined ? [] : Array.isArray(q.event_deltas) ? q.event_deltas : [q.event_deltas])
  }

  async run(ex: Exchange, state: ResponseState): Promise<void> {
    const { rid } = this.call
    // Before SSE starts, a client that goes away ends the work; startSse replaces this hook with its own.
    state.onAbort = () => this.end()
    try {
      // Owners feed only their primary threads' tails in-process; a child's listens over NATS.
      if (this.thread === 'primary')
        this.tap = this.deps.actors.localTails?.tap(this.sid, { onItem: (item) => this.onLive(item), onMoved: () => this.onMoved() }, this.deltas.size > 0)
      if (!this.tap) await this.listen()
      this.stillOpen()
      const lastSeq = await this.lastSeq()
      this.stillOpen()
      this.cursor = endOf(lastSeq)

      const after = this.replayFrom()
      let replay: EventReader | undefined
      if (after) {
        const found = await this.locate(after.id, after.name, lastSeq)
        if (this.ended) found?.reader.close()
        this.stillOpen()
        if (found) {
          this.cursor = found.at
          if (comparePositions(found.at, endOf(lastSeq)) < 0) replay = found.reader
          else found.reader.close()
        }
      }

      if (ex.method === 'HEAD') {
        replay?.close()
        this.end()
        return sendHead(ex, state, 200, sseHeaders(rid), undefined)
      }
      this.sse = startSse(ex, state, { requestId: rid, keepaliveMs: this.deps.keepaliveMs })
      this.sse.done.then(() => this.end())
      if (this.sse.closed) return this.end()
      if (replay) await this.readThrough(lastSeq, replay)
      if (this.ended) return
      this.goLive()
    } catch (err) {
      if (!this.sse) {
        this.end()
        throw err
      }
      this.fail(err)
    }
  }

  /** The owner's `stream.open`: the sequence of the session's last stored message. */
  private async lastSeq(): Promise<number> {
    const { route, rid, params, query } = this.call
    const opened = await dispatch(this.deps.actors.wire, route, { op: route.op.name, rid, params, query, body: undefined }, this.deps.actorTimeoutMs)
    const lastSeq = (opened as Partial<StreamOpenReply> | undefined)?.last_seq
    if (typeof lastSeq !== 'number' || !Number.isSafeInteger(lastSeq) || lastSeq < 0) {
      throw fail('internal', `stream.open answered ${JSON.stringify(opened)}`)
    }
    return lastSeq
  }

  /** Listens on the session's live subject; resolves once the server has the subscription. */
  private async listen(): Promise<void> {
    this.membership = this.subscriptions.join(
      this.sid,
      { onItem: (item) => this.onLive(item), onClose: () => this.end(), onResume: () => this.onResume() },
      this.thread,
    )
    await this.membership.ready
  }

  /** The in-process feed stopped: nothing more comes that way. */
  private onMoved(): void {
    this.tap = undefined
    if (this.ended) return
    this.moved = true
    if (this.live) this.resync()
  }

  /**
   * The NATS connection came back: what was stored while it was away never came live, and, unless something else is
   * stored on its subject, nothing would reveal it. Read back through the owner's `last_seq`.
   */
  private onResume(): void {
    if (this.ended) return
    if (this.live) this.resync()
    else this.resumed = true
  }

  /**
   * Goes on over NATS from `cursor` (moving there, or after the connection came back): subscribes unless it is,
   * asks the owner for `last_seq` and reads back what was stored through it (the subscription has everything stored
   * after it was registered), then forwards what the subscription buffered, skipping what the read sent.
   */
  private resync(): void {
    this.live = false
    this.resumed = false
    void (async () => {
      try {
        if (!this.membership) await this.listen()
        // The pump stops before its next event now that the tail is not live.
        await this.pumped
        if (this.ended) return
        // Asked once subscribed: what is stored after this answer comes live, what is stored before is read back.
        const lastSeq = await this.lastSeq()
        if (this.ended) return
        await this.catchUp(lastSeq)
        if (!this.ended) this.goLive()
      } catch (err) {
        this.fail(err)
      }
    })()
  }

  /**
   * Before SSE starts, a tail that ended (client gone, gateway closing, NATS connection closed) answers a retryable
   * 503; nothing is written if the client is gone.
   */
  private stillOpen(): void {
    if (this.ended) throw fail('stream_closed')
  }

  /** `?after=` wins over the `Last-Event-ID` header; empty values mean no replay. */
  private replayFrom(): { id: string; name: string } | undefined {
    const q = (this.call.query ?? {}) as StreamQuery
    if (typeof q.after === 'string' && q.after !== '') return { id: q.after, name: 'after' }
    const h = this.call.headers['last-event-id']?.trim()
    if (h) return { id: h, name: 'Last-Event-ID' }
    return undefined
  }

  /**
   * Finds the stored event with this id, leaving the read positioned just after it. Reads from a few
   * seconds before the time in the id (ids are `<prefix>_<ULID>`), then, if it is not there, from the start up to
   * where the first read began. Null when the tail ended or the session was deleted meanwhile. A search whose reads
   * ended short is made again; one that keeps ending short is a 503, never "not in session".
   */
  private async locate(id: string, name: string, lastSeq: number): Promise<{ reader: EventReader; at: Position } | null> {
    if (lastSeq === 0) throw fail('event_not_in_session', name, this.sid, id)
    for (let reads = 1; ; reads++) {
      const found = await this.search(id, lastSeq)
      if (found === null || 'reader' in found) return found
      if (found.absent) throw fail('event_not_in_session', name, this.sid, id)
      if (reads >= SHORT_READS) throw fail('history_behind', this.sid, found.readTo, found.target)
      this.deps.log.info({ session: this.sid, ...found }, 'event search read short (a replica behind): reading again')
      await sleep(SHORT_READ_PAUSE_MS)
    }
  }

  /** One search for `locate`: found, null (the tail ended), absent, or read short (`readTo` of `target`). */
  private async search(
    id: string,
    lastSeq: number,
  ): Promise<{ reader: EventReader; at: Position } | null | { absent: true } | { absent: false; readTo: number; target: number }> {
    const minted = mintTime(id)
    const plans: ReadFrom[] = minted === undefined ? ['all'] : [{ time: new Date(minted - ID_TIME_SLACK_MS) }, 'all']
    let stopAt: number | undefined
    for (const from of plans) {
      const reader = await this.openReader(from)
      if (!reader) return null
      let first: number | undefined
      let readTo = 0
      let covered = false
      for (;;) {
        const item = await reader.next()
        if (!item || item.seq === undefined) break
        first ??= item.seq
        readTo = item.seq
        if (item.id === id) return { reader, at: positionOf(item) }
        if ((item.seq >= lastSeq && item.last) || item.seq > lastSeq || (stopAt !== undefined && item.seq >= stopAt)) {
          covered = true
          break
        }
      }
      reader.close()
      if (this.reader === reader) this.reader = undefined
      if (this.ended || this.deletedSeen) return null
      // A read from a time may rightly find nothing stored since (the read from the start covers the rest); one that
      // found something, and every read from the start, runs dry short of its end only on a replica behind.
      if (!covered && (first !== undefined || from === 'all')) return { absent: false, readTo, target: stopAt ?? lastSeq }
      // The next read (from the start) only needs to cover what this one did not.
      if (first !== undefined) stopAt = first
    }
    return { absent: true }
  }

  private async openReader(from: ReadFrom): Promise<EventReader | undefined> {
    if (this.ended || this.deletedSeen) return undefined
    const reader = await this.deps.actors.readHistory(this.sid, from, this.thread)
    if (this.ended || this.deletedSeen) {
      reader.close()
      return undefined
    }
    this.reader = reader
    return reader
  }

  /**
   * Sends the stored events after `cursor` through the message at `until`, a sequence known to be stored (`last_seq`,
   * a gap's `prevSeq`), starting with `reader` when one is positioned at `cursor`. A read that runs dry short of
   * `until` is read again from `cursor`; after `SHORT_READS` such reads, a 503 (`history_behind`).
   */
  private async readThrough(until: number, reader?: EventReader): Promise<void> {
    for (let reads = 1; ; reads++) {
      if (comparePositions(this.cursor, endOf(until)) >= 0) {
        reader?.close()
        return
      }
      // A message handled in part is read again from its start; `forward` skips what was sent.
      reader ??= await this.openReader({ seq: this.cursor.part === END ? this.cursor.seq + 1 : this.cursor.seq })
      if (!reader) return
      await this.replay(reader, until)
      reader = undefined
      if (this.ended || this.deletedSeen || comparePositions(this.cursor, endOf(until)) >= 0) return
      if (reads >= SHORT_READS) throw fail('history_behind', this.sid, this.cursor.seq, until)
      this.deps.log.info({ session: this.sid, readTo: this.cursor.seq, until }, 'history read short (a replica behind): reading again')
      await sleep(SHORT_READ_PAUSE_MS)
    }
  }

  /** Sends what the read yields through the message at `until` (or until the read runs dry), then closes the read. */
  private async replay(reader: EventReader, until: number): Promise<void> {
    this.reader = reader
    try {
      while (!this.ended) {
        const item = await reader.next()
        if (!item || item.seq === undefined) break
        this.forward(item)
        if (item.seq > until || (item.seq === until && item.last)) break
      }
    } finally {
      reader.close()
      if (this.reader === reader) this.reader = undefined
    }
  }

  private onLive(item: Item): void {
    if (this.ended) return
    this.queue.push(item)
    if (item.type === DELETED && !this.live) {
      // The history may be going away: stop reading it and tell the client at once.
      this.deletedSeen = true
      this.reader?.close()
    }
    if (this.live) this.pump()
  }

  /**
   * Switches from buffering to forwarding. Previews that arrived before a stored message the client already has
   * (sent by the replay, or before the point it asked for) belong to the past: dropped.
   */
  private goLive(): void {
    if ((this.moved && !this.membership) || this.resumed) {
      this.resync()
      return
    }
    let lastKnown = -1
    this.queue.forEach((it, i) => {
      if (it.seq !== undefined && !isAfter(it, this.cursor)) lastKnown = i
    })
    if (lastKnown > 0) {
      const kept = this.queue.filter((it, i) => i >= lastKnown || it.seq !== undefined || !PREVIEW_TYPES.has(it.type ?? ''))
      this.queue.splice(0, this.queue.length, ...kept)
    }
    this.live = true
    this.pump()
  }

  private pump(): void {
    if (this.pumping) return
    this.pumping = true
    this.pumped = this.drain()
  }

  private async drain(): Promise<void> {
    try {
      while (!this.ended && this.live && this.queue.length > 0) {
        const item = this.queue.shift()!
        if (item.seq !== undefined && isAfter(item, this.cursor) && item.prevSeq !== undefined && comparePositions(endOf(item.prevSeq), this.cursor) > 0) {
          await this.catchUp(item.prevSeq)
          if (this.ended) return
        }
        this.forward(item)
      }
    } catch (err) {
      this.fail(err)
    } finally {
      this.pumping = false
    }
  }

  /** Reads back stored events after `cursor` through the message at `until` that never arrived live. */
  private async catchUp(until: number): Promise<void> {
    this.deps.log.debug({ session: this.sid, after: this.cursor.seq, until }, 'live tail gap: reading back')
    await this.readThrough(until)
  }

  /** Sends one event if the client should see it. Stored events at or before `cursor` were handled already. */
  private forward(item: Item): void {
    const sse = this.sse
    if (this.ended || !sse) return
    const type = item.type
    if (item.seq !== undefined) {
      if (!isAfter(item, this.cursor)) return
      this.cursor = positionOf(item)
      if (!type || isInternalType(type)) return
      if (item.id !== undefined) this.previews.delete(item.id)
      sse.sendFrame((item.frame ??= frame(type, item.json, item.id)))
      if (type === DELETED) this.end()
      return
    }
    if (!type || isInternalType(type)) return
    if (PREVIEW_TYPES.has(type)) {
      if (!item.deltaOf || !this.deltas.has(item.deltaOf)) return
      if (!this.previewInOrder(type, item)) return
      sse.sendFrame((item.frame ??= frame(type, item.json, undefined)))
      return
    }
    sse.sendFrame((item.frame ??= frame(type, item.json, item.id ?? payloadId(item.json))))
    if (type === DELETED) this.end()
  }

  /**
   * A client joining mid-message would see deltas without their `event_start` (the official client's
   * accumulator throws on that): deltas are forwarded only for previews whose start this stream sent.
   */
  private previewInOrder(type: string, item: Item): boolean {
    const id = (item.previewOf ??= previewOf(type, item.json))
    if (id === null) return false
    if (type === 'event_start') {
      if (id !== '') {
        this.previews.add(id)
        if (this.previews.size > MAX_OPEN_PREVIEWS) this.previews.delete(this.previews.values().next().value!)
      }
      return true
    }
    return id !== '' && this.previews.has(id)
  }

  /** After SSE started: an `event: error` message (the official client throws it), then the end. */
  private fail(err: unknown): void {
    if (!isApiError(err)) this.deps.log.error({ err, rid: this.call.rid, session: this.sid }, 'session stream failed')
    if (this.sse && !this.sse.closed) this.sse.send('error', toEnvelope(err, this.call.rid).body)
    this.end()
  }

  /** Ends the stream: the response (if SSE started), its share of the subscription, any read. Idempotent. */
  end(): void {
    if (this.ended) return
    this.ended = true
    this.queue.length = 0
    this.reader?.close()
    this.reader = undefined
    this.tap?.close()
    this.membership?.leave()
    this.sse?.close()
    this.onEnd()
  }
}

/** The bytes of one SSE message, written as they are to every stream that forwards it. */
function frame(type: string, json: string, id: string | undefined): Uint8Array {
  return Buffer.from(formatSseRaw(type, json, id))
}

/** The event a preview belongs to, read once per message: see `Item.previewOf`. */
function previewOf(type: string, json: string): string | null {
  let payload: { event?: { id?: unknown }; event_id?: unknown }
  try {
    payload = JSON.parse(json)
  } catch {
    return null
  }
  const id = type === 'event_start' ? payload.event?.id : payload.event_id
  return typeof id === 'string' ? id : ''
}

/** A stream-only event (the deletion notice) published without `Troupe-Event-Id`: its id from the payload. */
function payloadId(json: string): string | undefined {
  try {
    const id = (JSON.parse(json) as { id?: unknown }).id
    return typeof id === 'string' ? id : undefined
  } catch {
    return undefined
  }
}

/** The mint time of a `<prefix>_<ULID>` id, or undefined when the id does not carry a plausible one. */
function mintTime(id: string): number | undefined {
  const ulid = id.slice(id.indexOf('_') + 1)
  if (ulid.length !== 26) return undefined
  try {
    const t = decodeTime(ulid)
    return t > Date.UTC(2020, 0, 1) && t < Date.now() + 86_400_000 ? t : undefined
  } catch {
    return undefined
  }
}
