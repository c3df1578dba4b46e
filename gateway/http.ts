import type { After, Exchange, Headers } from './transport.js'

/** What the gateway knows of one response: whether it may still answer, and what it sent, for the log line. */
export interface ResponseState {
  aborted: boolean
  done: boolean
  /** Called once if the client goes away, so pending work (a stream opening or running) can stop. */
  onAbort?: () => void
  /** The status sent, for the request's log line. */
  status?: number
  /** Body bytes sent (an SSE stream adds as it writes), for the request's log line; 0 for HEAD. */
  bytesOut?: number
  /** Set while the response outlives its handler (SSE): settles when the stream ends. */
  streaming?: Promise<void>
}

/**
 * Writes a whole response. A HEAD request gets the same status and headers, with the `content-length` of the body a
 * GET would have had, and no body.
 */
export function send(ex: Exchange, state: ResponseState, status: number, headers: Headers, body: string | Uint8Array, after: After = 'keep'): void {
  if (state.aborted || state.done) return
  // The transports copy a string into UTF-8 anyway: encoding it here costs nothing more and gives the byte count.
  const bytes = typeof body === 'string' ? Buffer.from(body) : body
  // HEAD never reads a body (gateway/body.ts): there is nothing to linger over or to close for.
  if (ex.method === 'HEAD') {
    sendHead(ex, state, status, headers, bytes.byteLength)
    return
  }
  state.done = true
  state.status = status
  state.bytesOut = bytes.byteLength
  ex.send(status, headers, bytes, after)
}

/**
 * Answers a HEAD request: status and headers, `content-length: length` when the GET's body has one (an event
 * stream has none), no body.
 */
export function sendHead(ex: Exchange, state: ResponseState, status: number, headers: Headers, length: number | undefined): void {
  if (state.aborted || state.done) return
  state.done = true
  state.status = status
  state.bytesOut = 0
  ex.sendHead(status, headers, length)
}

export function sendJson(ex: Exchange, state: ResponseState, status: number, rid: string, payload: unknown, extra: Headers = {}, after: After = 'keep'): void {
  send(ex, state, status, { 'content-type': 'application/json', 'request-id': rid, ...extra }, JSON.stringify(payload), after)
}
