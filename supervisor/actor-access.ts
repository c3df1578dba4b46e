import { jetstream } from '@nats-io/jetstream'
import type { NatsConnection } from '@nats-io/transport-node'
import type { ActorAccess } from '../gateway/types.js'
import { actorWire, storeUnavailable } from '../actors/kit/index.js'
import type { ActorWire } from '../protocol/wire.js'
import type { LocalTails } from '../protocol/event-item.js'
import { readSessionEvents } from '../actors/session/index.js'
import type { EventReader, ReadHistory } from '../protocol/event-item.js'
import type { JetStreamClient } from '@nats-io/jetstream'
import { fileBytes } from '../actors/file/index.js'
import { ObjectStores } from '../protocol/subjects.js'

/**
 * What the gateway asks of the actors, on one NATS connection: the actor wire (by default over NATS; an actor host's
 * own, which serves what it owns in-process, when one runs beside the gateway), the session kind's reader for
 * SSE replay, file and skill bundle bytes in their object stores, and, when an actor host runs beside the gateway, its session owners' in-process feed of SSE tails.
 * The gateway imports only protocol/, so the supervisor hands it these.
 */
export function actorAccess(nc: NatsConnection, wire: ActorWire = actorWire(nc), localTails?: LocalTails, tokenKey?: Uint8Array): ActorAccess {
  const js = jetstream(nc)
  return { wire, readHistory: gatewayReads(js), localTails, files: fileBytes(js), skills: fileBytes(js, ObjectStores.skills), tokenKey }
}

/**
 * The session kind's reader as the gateway gets it: a read that fails because the store is unavailable for a moment
 * (a timeout, no leader, the connection lost) fails with a retryable 503 (`store_unavailable`), which the gateway
 * answers as it is, rather than as an error it does not know (a 500).
 */
function gatewayReads(js: JetStreamClient): ReadHistory {
  const classified = (err: unknown) => storeUnavailable(err) ?? err
  return async (sessionId, from, thread = 'primary') => {
    const reader: EventReader = await readSessionEvents(js, sessionId, from, { thread }).catch((err) => Promise.reject(classified(err)))
    return { next: () => reader.next().catch((err) => Promise.reject(classified(err))), close: () => reader.close() }
  }
}
