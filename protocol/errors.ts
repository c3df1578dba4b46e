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

/** The serialisable form of an ApiError, as carried in an actor reply. */
export interface ErrorData {
  status: number
  type: ErrorType
  message: string
  code?: string
  /** Milliseconds the client should wait before retrying (503 only). */
  retryAfterMs?: number
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

export const routeNotFound = (method: string, path: string) =>
  new ApiError({ status: 404, type: 'not_found_error', message: `No route for ${method} ${path}` })

/** 409 for conflicts that retrying cannot fix; the gateway marks them `x-should-retry: false`. */
export const conflict = (message: string, code?: string) =>
  new ApiError({ status: 409, type: 'conflict_error', message, ...(code ? { code } : {}) })

export const authentication = (message: string) =>
  new ApiError({ status: 401, type: 'authentication_error', message })

export const tooLarge = (limit: number) =>
  new ApiError({ status: 413, type: 'request_too_large', message: `Request body exceeds the limit of ${limit} bytes` })

/** 503: nobody owns the target right now (failover) or it did not answer in time; the client retries. */
export const unavailable = (message: string, retryAfterMs = 500) =>
  new ApiError({ status: 503, type: 'overloaded_error', message, retryAfterMs })

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
  // Deterministic conflicts: the official client would otherwise retry a 409 twice.
  if (e.status === 409) headers['x-should-retry'] = 'false'
  if (e.retryAfterMs !== undefined) headers['retry-after-ms'] = String(e.retryAfterMs)
  const error: Envelope['body']['error'] = { type: e.type, message: e.message }
  if (e.code) error.details = { error_code: e.code }
  return { status: e.status, headers, body: { type: 'error', error, request_id: requestId } }
}
