import type { ActorRequest } from '../protocol/envelope.js'
import { opSubject } from '../protocol/subjects.js'
import type { Route } from '../protocol/routes/index.js'
import type { ActorWire } from '../protocol/wire.js'
import type { ParsePool } from './parse-pool.js'
import { idFromKey, newId } from '../protocol/ids.js'

/**
 * The subject that serves a request: its op's queue group, or the owner of the id the route names. A create of an
 * owner-placed kind mints that id first (from the Idempotency-Key when there is one, so a retry reaches the same
 * owner, which finds it stored); the router checked every id in the path.
 */
export function subjectFor(route: Route, params: Record<string, string>, key?: string): string {
  const { op } = route
  const param = op.id.param
  if (op.mint && params[param] === undefined) params[param] = key ? idFromKey(op.id.prefix, route.operationId, key) : newId(op.id.prefix)
  return opSubject(op, params[param])
}

export function dispatch(wire: ActorWire, route: Route, req: ActorRequest, timeoutMs: number): Promise<unknown> {
  return wire.ask(subjectFor(route, req.params, req.key), req, timeoutMs, sideEffects(route, req))
}

/** A timeout leaves the outcome unknown; only a request that stores something new without a key must say so. */
const sideEffects = (route: Route, req: Omit<ActorRequest, 'body'>) => !!route.once && req.key === undefined

/**
 * Dispatch of a large body: the pool validates it and encodes the whole request off the event loop, with the
 * params the subject needs (a create's minted id) already filled in.
 */
export async function dispatchLarge(
  wire: ActorWire,
  pool: ParsePool,
  route: Route,
  req: Omit<ActorRequest, 'body'>,
  bytes: Uint8Array,
  timeoutMs: number,
): Promise<unknown> {
  const subject = subjectFor(route, req.params, req.key)
  return wire.askEncoded(subject, await pool.encode(route, bytes, req), req.rid, timeoutMs, sideEffects(route, req))
}
