import type { NatsConnection } from '@nats-io/transport-node'
import { jetstreamManager } from '@nats-io/jetstream'
import { HOST_PING } from '../protocol/subjects.js'

export interface Readiness {
  ready: boolean
  checks: { nats: boolean; jetstream: boolean; actor_host: boolean }
}

/** Ready only when NATS, JetStream and at least one actor host answer, each within a short bound. */
export async function readiness(nc: NatsConnection, timeoutMs = 1000): Promise<Readiness> {
  const checks = { nats: !nc.isClosed() && !nc.isDraining(), jetstream: false, actor_host: false }
  if (checks.nats) {
    const [js, host] = await Promise.allSettled([
      jetstreamManager(nc, { timeout: timeoutMs }).then((m) => m.getAccountInfo()),
      nc.request(HOST_PING, undefined, { timeout: timeoutMs }),
    ])
    checks.jetstream = js.status === 'fulfilled'
    checks.actor_host = host.status === 'fulfilled'
  }
  return { ready: checks.nats && checks.jetstream && checks.actor_host, checks }
}
