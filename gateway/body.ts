import type { ApiError } from '../protocol/errors/api-error.js'
import { fail } from '../protocol/errors/fail.js'
import type { Headers } from './transport.js'

export interface BodyFacts {
  mayHaveBody: boolean
  /** The declared length: it sizes the read buffer and refuses early; the readers count what actually arrives. */
  declared: number | undefined
  /** A `content-length` that is not one non-negative integer: refuse the request. */
  problem?: ApiError
}

/**
 * Whether a request may carry a body, and its declared length. GET and HEAD bodies are never read (the transport
 * drops them); otherwise a body comes with `transfer-encoding` (which frames it even beside a `content-length`, as
 * RFC 9112 §6.3 says) or a positive `content-length`.
 */
export function bodyOf(method: string, headers: Headers): BodyFacts {
  if (method === 'GET' || method === 'HEAD') return { mayHaveBody: false, declared: undefined }
  if (headers['transfer-encoding'] !== undefined) return { mayHaveBody: true, declared: undefined }
  const raw = headers['content-length']
  if (raw === undefined) return { mayHaveBody: false, declared: undefined }
  // node's parser refuses anything else itself; uWS lets a repeated one through (framing the body by the first).
  if (!/^\d+$/.test(raw)) {
    return { mayHaveBody: true, declared: undefined, problem: fail('content_length_invalid', raw) }
  }
  // Past 2^53 the number is approximate, but still over any body limit: refused with a 413 unread.
  const declared = Number(raw)
  return { mayHaveBody: declared > 0, declared }
}
