import type { ActorRequest } from './envelope.js'

/** The NATS header naming the HTTP request an actor request serves, so `nats sub` shows it without decoding. */
export const REQUEST_ID_HEADER = 'Troupe-Request-Id'

/**
 * What a request body may not take of the NATS server's `max_payload`: the actor request's envelope and headers,
 * and the reply that echoes the body back with ids added (events.send answers with the stored events).
 */
export const ACTOR_REQUEST_HEADROOM = 64 * 1024

/** The largest body worth accepting when every body travels as one NATS message. */
export const bodyLimitFor = (wanted: number, maxPayload: number | undefined): number =>
  maxPayload === undefined ? wanted : Math.max(0, Math.min(wanted, maxPayload - ACTOR_REQUEST_HEADROOM))

/**
 * One actor request and its reply (msgpack both ways, the request id in the `Troupe-Request-Id` header too): the
 * reply's body, or the actor's ApiError thrown. Nobody subscribed (a partition in failover) or no answer in time
 * is a retryable 503; a request too big for the server's `max_payload` a 413. `uncertainOnTimeout`: the request
 * stores something new without an Idempotency-Key, so an outcome lost to a timeout is a 504 (default false).
 * Implemented by actors/kit/wire.ts; the gateway gets it from the supervisor.
 */
export interface ActorWire {
  ask<T = unknown>(subject: string, req: ActorRequest, timeoutMs: number, uncertainOnTimeout?: boolean): Promise<T>
  /** `ask` for a request already encoded (a large body, encoded off the event loop). */
  askEncoded<T = unknown>(subject: string, data: Uint8Array, rid: string, timeoutMs: number, uncertainOnTimeout?: boolean): Promise<T>
}
