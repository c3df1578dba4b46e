import { isApiError } from './api-error.js'
import type { ErrorType } from './catalog.js'
import { fail } from './fail.js'

export interface Envelope {
  status: number
  headers: Record<string, string>
  body: {
    type: 'error'
    error: { type: ErrorType; message: string; details?: { error_code: string; [more: string]: unknown }; [field: string]: unknown }
    request_id: string
  }
}

/** The one place errors become wire envelopes. Anything that is not an ApiError is a 500 that says nothing more. */
export function toEnvelope(err: unknown, requestId: string): Envelope {
  const e = isApiError(err) ? err : fail('internal')
  const headers: Record<string, string> = {}
  // Deterministic conflicts: the official client would otherwise retry a 409 twice. An uncertain outcome (504):
  // a blind retry could store the request twice.
  if (e.status === 409 || e.status === 504) headers['x-should-retry'] = 'false'
  if (e.retryAfterMs !== undefined) headers['retry-after-ms'] = String(e.retryAfterMs)
  // A 429's hint also in whole seconds, the header every HTTP client knows (the official client reads either).
  if (e.status === 429 && e.retryAfterMs !== undefined) headers['retry-after'] = String(Math.max(1, Math.ceil(e.retryAfterMs / 1000)))
  const error: Envelope['body']['error'] = { ...e.fields, type: e.type, message: e.message }
  if (e.code) error.details = { error_code: e.code, ...e.details }
  return { status: e.status, headers, body: { type: 'error', error, request_id: requestId } }
}
