/**
 * The error catalog. Every error that reaches a client is an ApiError built here; `toEnvelope` is the one
 * place that turns it into the wire envelope. Finer causes travel in `details.error_code`, which the
 * official client maps to dedicated error classes.
 */

export type ErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'not_found_error'
  | 'conflict_error'
  | 'request_too_large'
  | 'api_error'
  | 'overloaded_error'
  | 'timeout_error'

/** The serialisable form of an ApiError, as carried in an actor reply. */
export interface ErrorData {
  status: number
  type: ErrorType
  message: string
  code?: string
  /** Milliseconds the client should wait before retrying (503 only). */
  retryAfterMs?: number
  /**
   * Between actor and gateway only, never on the wire: a write of the request got no answer, so it may be stored.
   * A request that stores something new without an Idempotency-Key then answers 504 (`uncertain`), not 503.
   */
  outcomeUnknown?: boolean
}

export class ApiError extends Error {
  readonly status: number
  readonly type: ErrorType
  readonly code: string | undefined
  readonly retryAfterMs: number | undefined

  constructor(data: ErrorData) {
    super(data.message)
    this.name = 'ApiError'
    this.status = data.status
    this.type = data.type
    this.code = data.code
    this.retryAfterMs = data.retryAfterMs
  }

  toData(): ErrorData {
    const d: ErrorData = { status: this.status, type: this.type, message: this.message }
    if (this.code !== undefined) d.code = this.code
    if (this.retryAfterMs !== undefined) d.retryAfterMs = this.retryAfterMs
    return d
  }
}

export const isApiError = (e: unknown): e is ApiError => e instanceof ApiError

/** 400: the request breaks a rule of its shape or of the resource. */
export const invalidRequest = (message: string, code?: string) =>
  new ApiError({ status: 400, type: 'invalid_request_error', message, ...(code ? { code } : {}) })

/** 422: well-formed, but this server cannot do it (unsupported capability, vendor-only feature). */
export const unprocessable = (message: string, code?: string) =>
  new ApiError({ status: 422, type: 'invalid_request_error', message, ...(code ? { code } : {}) })

export const notFound = (what: string, id: string, code?: string) =>
  new ApiError({ status: 404, type: 'not_found_error', message: `${what} ${id} not found`, ...(code ? { code } : {}) })

/**
 * For `.catch`: a 404 about an id the request named in a body field says which field
 * ("environment_id: Environment env_… not found"); anything else passes through unchanged.
 */
export const inField = (field: string) => (err: unknown): never => {
  if (isApiError(err) && err.status === 404) throw new ApiError({ ...err.toData(), message: `${field}: ${err.message}` })
  throw err
}

export const routeNotFound = (method: string, path: string) =>
  new ApiError({ status: 404, type: 'not_found_error', message: `No route for ${method} ${path}` })

/** 409 for conflicts that retrying cannot fix; the gateway marks them `x-should-retry: false`. */
export const conflict = (message: string, code?: string) =>
  new ApiError({ status: 409, type: 'conflict_error', message, ...(code ? { code } : {}) })

export const authentication = (message: string) =>
  new ApiError({ status: 401, type: 'authentication_error', message })

/** 405: the path exists, under other methods (the gateway lists them in `Allow`). */
export const methodNotAllowed = (method: string, path: string, allowed: readonly string[]) =>
  new ApiError({ status: 405, type: 'invalid_request_error', message: `${method} is not allowed on ${path}; allowed: ${allowed.join(', ')}` })

export const tooLarge = (limit: number) =>
  new ApiError({ status: 413, type: 'request_too_large', message: `Request body exceeds the limit of ${limit} bytes` })

/** 413: the request, encoded for NATS, would not fit the server's `max_payload`. */
export const encodedTooLarge = (size: number, maxPayload: number) =>
  new ApiError({
    status: 413,
    type: 'request_too_large',
    message: `Request is ${size} bytes once encoded for NATS, over the server's max_payload of ${maxPayload} bytes (raise max_payload in the NATS configuration)`,
  })

/** 413: one event of the request could not be stored whole; nothing of the request was stored. */
export const eventTooLarge = (index: number, eventType: string, size: number, limit: number) =>
  new ApiError({
    status: 413,
    type: 'request_too_large',
    message: `The event at index ${index} of the request (${eventType}) is ${size} bytes of JSON; a stored event holds at most ${limit}. Nothing of this request was stored`,
  })

/** 503: nobody owns the target right now (failover) or it did not answer in time; the client retries. */
export const unavailable = (message: string, retryAfterMs = 500) =>
  new ApiError({ status: 503, type: 'overloaded_error', message, retryAfterMs })

/**
 * 504: a request that stores something got no certain outcome (its write, or the owner's answer, timed out), so
 * it may or may not have been stored. Never retried blindly (`x-should-retry: false`): a retry could store it
 * twice. An `Idempotency-Key` makes such retries safe, and then the answer is a 503 instead.
 */
export const uncertain = (what: string) =>
  new ApiError({
    status: 504,
    type: 'timeout_error',
    message: `${what} may or may not have been stored; look before sending it again. Requests sent with an Idempotency-Key header can be retried safely`,
  })

/** 422: an Idempotency-Key already used for a request with another body. */
export const idempotencyKeyReused = () =>
  unprocessable('Idempotency-Key header: this key was first used with a different request; use a new key for a new request', 'idempotency_key_reused')

export const internal = (message = 'Internal server error') =>
  new ApiError({ status: 500, type: 'api_error', message })

export interface Envelope {
  status: number
  headers: Record<string, string>
  body: { type: 'error'; error: { type: ErrorType; message: string; details?: { error_code: string } }; request_id: string }
}

/** The one place errors become wire envelopes. Anything that is not an ApiError is a 500 that says nothing more. */
export function toEnvelope(err: unknown, requestId: string): Envelope {
  const e = isApiError(err) ? err : internal()
  const headers: Record<string, string> = {}
  // Deterministic conflicts: the official client would otherwise retry a 409 twice. An uncertain outcome (504):
  // a blind retry could store the request twice.
  if (e.status === 409 || e.status === 504) headers['x-should-retry'] = 'false'
  if (e.retryAfterMs !== undefined) headers['retry-after-ms'] = String(e.retryAfterMs)
  const error: Envelope['body']['error'] = { type: e.type, message: e.message }
  if (e.code) error.details = { error_code: e.code }
  return { status: e.status, headers, body: { type: 'error', error, request_id: requestId } }
}
