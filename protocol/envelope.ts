import type { ErrorData } from './errors/api-error.js'
import type { SessionsTokenClaims } from './sessions-token.js'

/** One HTTP request as it reaches an actor: already validated by the route's schemas. */
export interface ActorRequest<B = unknown, Q = unknown> {
  op: string
  /** The HTTP request id (`req_…`), for logs. */
  rid: string
  params: Record<string, string>
  query: Q
  body: B
  /**
   * The client's `Idempotency-Key`, on routes that store something new (`Route.once`): a retry with the same
   * key gets the first answer and stores nothing twice.
   */
  key?: string
  /** The request headers its route reads (`Route.headers`), by lower-case name. */
  headers?: Record<string, string>
  /** A sessions token the request presented, verified and within its scope (the gateway checked both). */
  token?: SessionsTokenClaims
  /** The API key that made the request, when keys are checked (the gateway checked it): what a session records of its maker. */
  caller?: Caller
}

/** Who called, as the gateway's key check found: the key's id and its workspace. */
export interface Caller {
  api_key_id: string
  workspace_id: string
}

export type ActorReply = { ok: true; body: unknown } | { ok: false; error: ErrorData }
