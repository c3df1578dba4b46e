import { RequestError } from '@nats-io/nats-core'
import type { NatsConnection, Subscription } from '@nats-io/transport-node'
import { hostPresenceSubject } from '../protocol/subjects.js'

/** A look at another host's presence gives up after this: a host that is stopped or stalled is not gone. */
const LOOK_TIMEOUT_MS = 500

/**
 * A host's NATS connection, as other hosts can see it. Each host answers on its own presence subject; when its
 * process dies the kernel closes its connection, the server drops its subscriptions at once, and a request to the
 * subject gets "no responders": the host can no longer receive anything. (No system account is needed for this.)
 */
export interface Presence {
  /** Answers on this host's subject, until `stop`. */
  start(): void
  stop(): void
  /**
   * True only when nobody is subscribed to `host`'s subject (its connection is gone); false when it answers, and
   * when the look fails otherwise (no answer in time: the host may be stopped, or its server cut off).
   */
  gone(host: string): Promise<boolean>
  /** The current connection to NATS (the server's client id, which a reconnect changes); undefined while none. */
  connection(): string | undefined
}

export function natsPresence(nc: NatsConnection, hostId: string): Presence {
  let sub: Subscription | undefined
  return {
    start() {
      sub ??= nc.subscribe(hostPresenceSubject(hostId), { callback: (_e, m) => void m.respond() })
    },
    stop() {
      sub?.unsubscribe()
      sub = undefined
    },
    gone: (host) =>
      nc.request(hostPresenceSubject(host), undefined, { timeout: LOOK_TIMEOUT_MS }).then(
        () => false,
        (err) => err instanceof RequestError && err.isNoResponders(),
      ),
    connection: () => (nc.info ? `${nc.info.server_id}/${nc.info.client_id}` : undefined),
  }
}
