import type { ErrorCode, ErrorType } from './catalog.js'

/** The serialisable form of an ApiError, as carried in an actor reply. */
export interface ErrorData {
  status: number
  type: ErrorType
  message: string
  /**
   * What the client reads in `details.error_code` (the official client maps it to dedicated error classes); absent
   * for codes the catalog keeps to itself. Carried apart from `reason` so that the wire form is decided once, where
   * the error is made.
   */
  code?: string
  /** The catalog code the error was made from, sent or not. Absent on errors from peers that predate the catalog. */
  reason?: ErrorCode
  /** Milliseconds the client should wait before retrying (503 only). */
  retryAfterMs?: number
  /** More of `details` beside `error_code`, for codes that carry some (a 412's `current_state`). */
  details?: Record<string, unknown>
  /** Fields of the error object beside `type` and `message` (a memory path conflict's `conflicting_path`). */
  fields?: Record<string, unknown>
  /**
   * Between actor and gateway only, never on the wire: a write of the request got no answer, so it may be stored.
   * A request that stores something new without an Idempotency-Key then answers 504 (`outcome_uncertain`), not 503.
   */
  outcomeUnknown?: boolean
}

/** An error a client may see. Made by `fail(code, …)` from the catalog; rebuilt from ErrorData after a NATS hop. */
export class ApiError extends Error {
  readonly status: number
  readonly type: ErrorType
  readonly code: string | undefined
  readonly reason: ErrorCode | undefined
  readonly retryAfterMs: number | undefined
  readonly details: Record<string, unknown> | undefined
  readonly fields: Record<string, unknown> | undefined

  constructor(data: ErrorData) {
    super(data.message)
    this.name = 'ApiError'
    this.status = data.status
    this.type = data.type
    this.code = data.code
    this.reason = data.reason
    this.retryAfterMs = data.retryAfterMs
    this.details = data.details
    this.fields = data.fields
  }

  toData(): ErrorData {
    const d: ErrorData = { status: this.status, type: this.type, message: this.message }
    if (this.code !== undefined) d.code = this.code
    if (this.reason !== undefined) d.reason = this.reason
    if (this.retryAfterMs !== undefined) d.retryAfterMs = this.retryAfterMs
    if (this.details !== undefined) d.details = this.details
    if (this.fields !== undefined) d.fields = this.fields
    return d
  }
}

export const isApiError = (e: unknown): e is ApiError => e instanceof ApiError
