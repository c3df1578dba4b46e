import { performance } from 'node:perf_hooks'
import type { NatsConnection } from '@nats-io/transport-node'
import type { Logger } from 'pino'
import { redact } from './nats-connect.js'
import { natsConnected, natsReconnects } from './metrics.js'

export interface ConnectionState {
  /** False from the moment the connection to NATS is lost until the client has reconnected. */
  readonly connected: boolean
}

/**
 * Says once that the NATS connection is lost and once that it is back. The client reconnects for ever
 * (`connectNats`), so a lost server is a state to report, not an error for every loop that meets it to log.
 */
export function watchConnection(nc: NatsConnection, log: Logger): ConnectionState {
  const state = { connected: true }
  natsConnected.set(1)
  let lostAt = 0
  void (async () => {
    for await (const s of nc.status()) {
      if (s.type === 'disconnect' && state.connected) {
        state.connected = false
        natsConnected.set(0)
        lostAt = performance.now()
        log.warn(
          { server: redact(s.server) },
          `lost the connection to NATS at ${redact(s.server)}; reconnecting until it is back (until then /readyz and API requests answer 503)`,
        )
      } else if (s.type === 'reconnect' && !state.connected) {
        state.connected = true
        natsConnected.set(1)
        natsReconnects.inc()
        log.info({ server: redact(s.server), after_ms: Math.round(performance.now() - lostAt) }, `reconnected to NATS at ${redact(s.server)}`)
      }
    }
  })()
  return state
}
