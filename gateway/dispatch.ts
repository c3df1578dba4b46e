import type { NatsConnection } from '@nats-io/transport-node'
import type { ActorRequest } from '../protocol/envelope.js'
import { actorSubject, partitionedSubject } from '../protocol/subjects.js'
import type { Route } from '../protocol/routes/index.js'
import { askActor } from '../protocol/transport.js'
import { newId } from '../protocol/ids.js'

/** The subject that owns a request: a shared kind's queue, or the partition of the keyed id. */
export function subjectFor(route: Route, params: Record<string, string>): string {
  const t = route.target
  if ('key' in t) {
    if (t.mint && params[t.key] === undefined) params[t.key] = newId(t.mint)
    return partitionedSubject(t.kind, params[t.key]!, t.op)
  }
  return actorSubject(t.kind, t.op)
}

export function dispatch(nc: NatsConnection, route: Route, req: ActorRequest, timeoutMs: number): Promise<unknown> {
  return askActor(nc, subjectFor(route, req.params), req, timeoutMs)
}
