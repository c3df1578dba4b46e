import type { ErrorData } from './errors.js'

/** One HTTP request as it reaches an actor: already validated by the route's schemas. */
export interface ActorRequest<B = unknown, Q = unknown> {
  op: string
  /** The HTTP request id (`req_…`), for logs. */
  rid: string
  params: Record<string, string>
  query: Q
  body: B
}

export type ActorReply = { ok: true; body: unknown } | { ok: false; error: ErrorData }
