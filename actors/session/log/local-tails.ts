import type { Logger } from 'pino'
import type { EventItem, LocalListener, LocalTails, LocalTap } from '../../../protocol/event-item.js'
import { partitionOf } from '../../../protocol/subjects.js'

export interface SessionTailsOptions {
  /** Whether a tail may be fed from here: this host serves the session's partition right now. */
  here(sessionId: string): boolean
  /** Whether a tail that this process does not feed may be listening (another host lives, or tails here use NATS). */
  othersMayTail(): boolean
  log: Logger
}

interface Tap {
  listener: LocalListener
  previews: boolean
}

/**
 * The SSE tails of this process fed by the session owners of this host (protocol/event-item.ts `LocalTails`). A tail
 * is taken only while this host serves the session's partition; from then on every message the session stores is
 * appended by its actor here, which hands it over once acknowledged (`EventLog`). When that stops being certain (the
 * partition goes, an append gets no answer), the session's tails are told to listen over NATS instead, and read back
 * from the stream what they may have missed: the switch is the tail's (gateway/session-stream.ts).
 */
export class SessionTails implements LocalTails {
  private readonly bySession = new Map<string, Set<Tap>>()

  /**
   * Sessions whose tails here went over to NATS while this host kept, or later took back, their ownership (an append
   * without an answer): their previews go out over NATS from then on. Only ever a handful.
   */
  private readonly overNats = new Set<string>()

  constructor(private readonly o: SessionTailsOptions) {}

  tap(sessionId: string, listener: LocalListener, previews: boolean): LocalTap | undefined {
    if (!this.o.here(sessionId)) return undefined
    let taps = this.bySession.get(sessionId)
    if (!taps) this.bySession.set(sessionId, (taps = new Set()))
    const tap = { listener, previews }
    taps.add(tap)
    return { close: () => this.drop(sessionId, tap) }
  }

  /**
   * Whether the session's previews go out over NATS: only when a tail this process does not feed may want them. A
   * tail elsewhere cannot be seen from here, so any other live host counts as one that might.
   */
  previewsOverNats(sessionId: string): boolean {
    return this.o.othersMayTail() || this.overNats.has(sessionId)
  }

  /** A stored message's events, once its append was acknowledged: built only when a tail listens. */
  stored(sessionId: string, items: () => EventItem[]): void {
    const taps = this.bySession.get(sessionId)
    if (!taps) return
    for (const item of items()) for (const tap of [...taps]) this.feed(sessionId, tap, item)
  }

  /** A stream-only event (a preview goes only to the tails that forward previews). */
  streamOnly(sessionId: string, item: EventItem, preview: boolean): void {
    for (const tap of [...(this.bySession.get(sessionId) ?? [])]) if (tap.previews || !preview) this.feed(sessionId, tap, item)
  }

  /** The session's tails go over to NATS: what is stored from now on may not come through here. */
  moved(sessionId: string): void {
    const taps = this.bySession.get(sessionId)
    if (!taps) return
    this.bySession.delete(sessionId)
    this.overNats.add(sessionId)
    for (const tap of taps) tap.listener.onMoved()
  }

  /** Partition p left this host: its sessions' tails go over to NATS. */
  released(partition: number): void {
    for (const sessionId of [...this.bySession.keys()]) if (partitionOf(sessionId) === partition) this.moved(sessionId)
  }

  /** A tail that fails is its own problem, never the appending actor's. */
  private feed(sessionId: string, tap: Tap, item: EventItem): void {
    try {
      tap.listener.onItem(item)
    } catch (err) {
      this.o.log.error({ err, session: sessionId }, 'local tail failed')
    }
  }

  private drop(sessionId: string, tap: Tap): void {
    const taps = this.bySession.get(sessionId)
    if (!taps?.delete(tap) || taps.size > 0) return
    this.bySession.delete(sessionId)
  }
}
