import type { HttpResponse } from 'uWebSockets.js'

const STATUS_TEXT: Record<number, string> = {
  200: '200 OK', 400: '400 Bad Request', 401: '401 Unauthorized', 404: '404 Not Found', 405: '405 Method Not Allowed',
  409: '409 Conflict', 413: '413 Payload Too Large', 422: '422 Unprocessable Entity', 500: '500 Internal Server Error',
  503: '503 Service Unavailable',
}

export const statusLine = (status: number) => STATUS_TEXT[status] ?? `${status} Status`

/** Tracks whether the client went away, which uWS requires us to know before touching `res` again. */
export interface ResponseState {
  aborted: boolean
  done: boolean
  /** Called once if the client goes away, so pending work (a body being read, a stream) can stop. */
  onAbort?: () => void
}

/**
 * Writes a whole response in one cork. `close` drops the connection afterwards, used when the request body
 * is left unread (413).
 */
export function send(
  res: HttpResponse,
  state: ResponseState,
  status: number,
  headers: Record<string, string>,
  body: string | Uint8Array,
  close = false,
): void {
  if (state.aborted || state.done) return
  state.done = true
  res.cork(() => {
    res.writeStatus(statusLine(status))
    for (const k in headers) res.writeHeader(k, headers[k]!)
    res.end(body, close)
  })
}

export function sendJson(
  res: HttpResponse,
  state: ResponseState,
  status: number,
  rid: string,
  payload: unknown,
  extra: Record<string, string> = {},
  close = false,
): void {
  send(res, state, status, { 'content-type': 'application/json', 'request-id': rid, ...extra }, JSON.stringify(payload), close)
}
