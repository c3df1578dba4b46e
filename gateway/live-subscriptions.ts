import type { NatsConnection, Subscription } from '@nats-io/transport-node'
import type { Logger } from 'pino'
import { liveItems, type EventItem } from '../protocol/event-item.js'
import { fail } from '../protocol/errors/fail.js'
import { liveSubject } from '../protocol/subjects.js'

/**
 * One core subscription to `troupe.live.<sid>.>` per session on this gateway, shared by every SSE tail of that
 * session (gateway/session-stream.ts). A thousand streams on one session cost one delivery from the server and
 * one parse per message, fanned out in-process, instead of a thousand of each.
 *
 * The first tail to join creates the subscription and flushes, so that the server has it before the tail asks the
 * owner for its last stored sequence; later joiners are listening from the moment they join, and wait for that
 * same flush if it has not completed yet. The last tail to leave unsubscribes.
 */

export interface LiveListener {
  /** A message on the session's live subject. The same object goes to every listener of the session: read only. */
  onItem(item: EventItem): void
  /** The subscription failed, or closed under the listener (the NATS connection closed): nothing more will come. */
  onClose(): void
  /**
   * The NATS connection was lost and is back, the subscription registered again: what was published meanwhile never
   * came, and only a later message of the same subject would reveal it (`Nats-Last-Sequence`).
   */
  onResume(): void
}

export interface LiveMembership {
  /** Resolves once the subscription is registered at the server: everything published afterwards reaches the listener. */
  readonly ready: Promise<void>
  /** Stops delivery to this listener; the last one to leave unsubscribes. Idempotent. */
  leave(): void
}

export interface LiveSubscriptions {
  /** Starts delivering the live messages of the session's `thread` (default its primary) to `listener`, synchronously. */
  join(sid: string, listener: LiveListener, thread?: string): LiveMembership
  /** Sessions with a subscription right now. */
  readonly size: number
}

interface Shared {
  sub: Subscription
  listeners: Set<LiveListener>
  /** The flush after subscribing. */
  ready: Promise<void>
}

export function createLiveSubscriptions(nc: NatsConnection, log: Logger): LiveSubscriptions {
  const bySession = new Map<string, Shared>()

  /** Ends every listener of a subscription that failed or closed, and forgets it. */
  const drop = (sid: string, shared: Shared) => {
    if (bySession.get(sid) === shared) bySession.delete(sid)
    for (const l of [...shared.listeners]) l.onClose()
    shared.listeners.clear()
  }

  void (async () => {
    for await (const s of nc.status()) {
      if (s.type !== 'reconnect') continue
      // The client subscribes again as it reconnects; once flushed, the server has every subscription.
      await nc.flush().catch(() => undefined)
      for (const shared of [...bySession.values()]) {
        for (const l of [...shared.listeners]) {
          try {
            l.onResume()
          } catch (err) {
            log.error({ err }, 'live listener failed')
          }
        }
      }
    }
  })()

  const subscribe = (sid: string, thread: string): Shared => {
    const listeners = new Set<LiveListener>()
    const sub = nc.subscribe(liveSubject(sid, thread), {
      callback: (err, msg) => {
        if (err) {
          log.warn({ err, session: sid }, 'live subscription failed')
          return drop(sid, shared)
        }
        // A listener that ends here (a deletion notice) leaves the set while it is iterated: safe for a Set.
        for (const item of liveItems(msg)) {
          for (const l of listeners) {
            try {
              l.onItem(item)
            } catch (err) {
              log.error({ err, session: sid }, 'live listener failed')
            }
          }
        }
      },
    })
    // The flush fails only with the connection (lost, or closed): the stream did not start, and may be asked again.
    const ready = nc.flush().catch(() => Promise.reject(fail('stream_closed')))
    // Awaited by the joiners; this keeps a failure nobody is waiting for from being unhandled.
    ready.catch(() => undefined)
    const shared: Shared = { sub, listeners, ready }
    sub.closed.then(
      () => drop(sid, shared),
      () => drop(sid, shared),
    )
    return shared
  }

  return {
    join(session, listener, thread = 'primary') {
      // One subscription per thread's subject: the session's own stream is its primary's.
      const sid = thread === 'primary' ? session : `${session}.${thread}`
      let shared = bySession.get(sid)
      if (!shared) {
        shared = subscribe(session, thread)
        bySession.set(sid, shared)
      }
      const s = shared
      s.listeners.add(listener)
      return {
        ready: s.ready,
        leave() {
          if (!s.listeners.delete(listener) || s.listeners.size > 0) return
          if (bySession.get(sid) === s) bySession.delete(sid)
          try {
            s.sub.unsubscribe()
          } catch {
            /* connection already closed */
          }
        },
      }
    },
    get size() {
      return bySession.size
    },
  }
}
