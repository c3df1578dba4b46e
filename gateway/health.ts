import type { NatsConnection } from '@nats-io/transport-node'
import { jetstreamManager } from '@nats-io/jetstream'
import { decode } from '../protocol/codec.js'
import { HOST_PING } from '../protocol/subjects.js'

export interface Readiness {
  ready: boolean
  checks: { nats: boolean; jetstream: boolean; actor_host: boolean; placement: boolean }
  /** While placement is not ready: what the answering host waits for (a partition, its own heartbeat). */
  waiting?: string
}

/**
 * Ready only when NATS answers a ping, JetStream answers, and an actor host says its store answers (its heartbeat
 * was acknowledged within the liveness TTL) and every partition has a live owner, each within a short bound.
 */
export async function readiness(nc: NatsConnection, timeoutMs = 1000): Promise<Readiness> {
  const checks = { nats: false, jetstream: false, actor_host: false, placement: false }
  let waiting: string | undefined
  if (!nc.isClosed() && !nc.isDraining()) {
    // A connection that is reconnecting is not closed: only a round trip tells that the server is there.
    const [ping, js, host] = await Promise.allSettled([
      within(nc.rtt(), timeoutMs),
      jetstreamManager(nc, { timeout: timeoutMs }).then((m) => m.getAccountInfo()),
      nc.request(HOST_PING, undefined, { timeout: timeoutMs }),
    ])
    checks.nats = ping.status === 'fulfilled'
    checks.jetstream = js.status === 'fulfilled'
    checks.actor_host = host.status === 'fulfilled'
    if (host.status === 'fulfilled') {
      try {
        const answer = decode<{ ready?: boolean; host?: string; waiting?: string }>(host.value.data)
        checks.placement = answer.ready === true
        if (!checks.placement && answer.waiting) waiting = `${answer.host}: ${answer.waiting}`
      } catch {}
    }
  }
  return { ready: checks.nats && checks.jetstream && checks.actor_host && checks.placement, checks, ...(waiting ? { waiting } : {}) }
}

function within<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms)))
  return Promise.race([p, late]).finally(() => clearTimeout(timer))
}
