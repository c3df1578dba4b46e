import type { IdPrefix } from '../ids.js'
import type { SharedKind, PartitionedKind } from '../subjects.js'

export type Method = 'GET' | 'POST' | 'DELETE'

/** Which beta a strict-mode request must claim on this route. */
export type BetaGroup = 'managed-agents' | 'skills' | 'memory'

export type RouteTarget =
  | { kind: SharedKind; op: string }
  /**
   * Single-activation kinds: `key` names the path parameter whose id picks the partition. `mint` (creates):
   * the gateway mints a new id with this prefix into `key`, so the create lands on the id's future owner.
   */
  | { kind: PartitionedKind; op: string; key: string; mint?: 'sesn' }

/** A schema as the validator sees it: arktype types are callables of this shape. */
export type Schema = (input: unknown) => unknown

export interface Route {
  method: Method
  /** Path with `{param}` segments, exactly as documented in the OpenAPI inventory. */
  path: string
  operationId: string
  summary: string
  target: RouteTarget
  /** Body schema; routes without one take no body (the official client sends none). */
  body?: Schema
  /** Query schema over the flattened query (see gateway/query.ts); unknown parameters are ignored. */
  query?: Schema
  beta?: BetaGroup
  /**
   * Each call stores something new (a create, events.send): the route honours `Idempotency-Key`, and without one
   * an outcome lost to a timeout is a 504 the client must not retry blindly, rather than a retryable 503.
   */
  once?: boolean
  /** Served as a server-sent event stream rather than one JSON reply. */
  stream?: boolean
}

/** Path parameter names and the id prefix they must carry; anything else is a 404 before any actor is asked. */
export const PATH_ID_PREFIX: Record<string, { prefix: IdPrefix; kind: string }> = {
  agent_id: { prefix: 'agent', kind: 'Agent' },
  environment_id: { prefix: 'env', kind: 'Environment' },
  session_id: { prefix: 'sesn', kind: 'Session' },
}
