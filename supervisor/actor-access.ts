import { jetstream } from '@nats-io/jetstream'
import type { NatsConnection } from '@nats-io/transport-node'
import type { ActorAccess } from '../gateway/types.js'
import { actorWire } from '../actors/kit/wire.js'
import { readSessionEvents } from '../actors/session/event-reader.js'

/**
 * What the gateway asks of the actors, on one NATS connection: the actor wire, and the session kind's reader for
 * SSE replay. The gateway imports only protocol/, so the supervisor hands it these.
 */
export function actorAccess(nc: NatsConnection): ActorAccess {
  const js = jetstream(nc)
  return { wire: actorWire(nc), readHistory: (sessionId, from) => readSessionEvents(js, sessionId, from) }
}
