import type { NatsConnection } from '@nats-io/transport-node'
import type { ActorRequest } from '../protocol/envelope.js'
import { actorSubject, partitionedSubject } from '../protocol/subjects.js'
import type { Route } from '../protocol/routes/index.js'
import { askActor, askActorEncoded } from '../protocol/transport.js'
import type { ParsePool } from './parse-pool.js'
import { idFromKey, newId } from '../protocol/ids.js'

/** The subject that owns a request: a shared kind's queue, or the partition of the keyed id. */
export function subjectFor(route: Route, params: Record<string, string>, key?: string): string {
  const t = route.target
  if ('key' in t) {
    // With an Idempotency-Key a create's id comes from the key: its retry reaches the same owner, which finds it stored.
    if (t.mint && params[t.key] === undefined) params[t.key] = key ? idFromKey(t.mint, route.operationId, key) : newId(t.mint)
    return partitionedSubject(t.kind, params[t.key]!, t.op)
  }
  return actorSubject(t.kind, t.op)
}

export function dispatch(nc: NatsConnection, route: Route, req: ActorRequest, timeoutMs: number): Promise<unknown> {
  return askActor(nc, subjectFor(route, req.params, req.key), req, timeoutMs, sideEffects(route, req))
}

/** A timeout leaves the outcome unknown; only a request that stores something new without a key must say so. */
const sideEffects = (route: Route, req: Omit<ActorRequest, 'body'>) => !!route.once && req.key === undefined

/**
 * Dispatch of a large body: the pool validates it and encodes the whole request off the event loop, with the
 * params the subject needs (a create's minted id) already filled in.
 */
export async function dispatchLarge(
  nc: NatsConnection,
  pool: ParsePool,
  route: Route,
  req: Omit<ActorRequest, 'body'>,
  bytes: Uint8Array,
  timeoutMs: number,
): Promise<unknown> {
  const subject = subjectFor(route, req.params, req.key)
  return askActorEncoded(nc, subject, await pool.encode(route, bytes, req), req.rid, timeoutMs, sideEffects(route, req))
}
