import type { NatsConnection } from '@nats-io/transport-node'
import { jetstreamManager } from '@nats-io/jetstream'
import { decode } from '../protocol/codec.js'
import { HOST_PING } from '../protocol/subjects.js'

export interface Readiness {
  ready: boolean
  checks: { nats: boolean; jetstream: boolean; actor_host: boolean; placement: boolean }
}

/**
 * Ready only when NATS and JetStream answer, and an actor host says its store answers (its heartbeat was
 * acknowledged within the liveness TTL) and every partition has a live owner, each within a short bound.
 */
export async function readiness(nc: NatsConnection, timeoutMs = 1000): Promise<Readiness> {
  const checks = { nats: !nc.isClosed() && !nc.isDraining(), jetstream: false, actor_host: false, placement: false }
  if (checks.nats) {
    const [js, host] = await Promise.allSettled([
      jetstreamManager(nc, { timeout: timeoutMs }).then((m) => m.getAccountInfo()),
      nc.request(HOST_PING, undefined, { timeout: timeoutMs }),
    ])
    checks.jetstream = js.status === 'fulfilled'
    checks.actor_host = host.status === 'fulfilled'
    if (host.status === 'fulfilled') {
      try {
        checks.placement = decode<{ ready?: boolean }>(host.value.data).ready === true
      } catch {}
    }
  }
  return { ready: checks.nats && checks.jetstream && checks.actor_host && checks.placement, checks }
}
