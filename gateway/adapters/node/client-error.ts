import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http'
import type { Duplex } from 'node:stream'
import type { ApiError } from '../../../protocol/errors/api-error.js'
import { toEnvelope } from '../../../protocol/errors/envelope.js'
import { fail } from '../../../protocol/errors/fail.js'
import { newId } from '../../../protocol/ids.js'
import { LINGER_MS } from '../../transport.js'

/** What node's parser reports: `code` (HPE_…, or ERR_HTTP_REQUEST_TIMEOUT) and, for parse errors, `reason`. */
type ClientError = NodeJS.ErrnoException & { reason?: string }

/** The request a socket is serving and its response, while that response is not complete. */
export type InFlight = WeakMap<Duplex, { req: IncomingMessage; res: ServerResponse }>

/**
 * Answers what node's HTTP parser refused (bad request line, bad chunked framing, duplicate content-length,
 * oversized headers, a request too slow to arrive) with the API's JSON envelope and a request id, written raw on the
 * socket, then closes. When the socket is still answering an earlier request that arrived whole (the bad one was
 * pipelined behind it), the raw answer waits for that response to finish; when the bad bytes are that request's own
 * body, that request gets the raw answer (its handler sees the connection go).
 */
export function answerClientError(err: ClientError, socket: Duplex, inFlight: InFlight, maxHeaderBytes: number): void {
  if (answered.has(socket)) return
  answered.add(socket)
  const busy = inFlight.get(socket)
  if (err.code === 'ECONNRESET' || err.code === 'EPIPE' || !socket.writable || (busy?.res.headersSent && !busy.req.complete)) {
    socket.destroy()
    return
  }
  if (busy?.req.complete) {
    busy.res.once('close', () => answer(err, socket, maxHeaderBytes))
    return
  }
  answer(err, socket, maxHeaderBytes)
}

function answer(err: ClientError, socket: Duplex, maxHeaderBytes: number): void {
  writeEnvelope(socket, describe(err, maxHeaderBytes))
}

/**
 * CONNECT: node hands the socket over (its `connect` event) and answers nothing when nobody listens, so the
 * client would see the connection close. It is a method like any other we do not serve: 405, the envelope.
 */
export function refuseConnect(socket: Duplex): void {
  writeEnvelope(socket, fail('connect_not_allowed'))
}

function writeEnvelope(socket: Duplex, err: ApiError): void {
  if (!socket.writable) return void socket.destroy()
  const rid = newId('req')
  const env = toEnvelope(err, rid)
  const body = JSON.stringify(env.body)
  socket.end(
    `HTTP/1.1 ${env.status} ${STATUS_CODES[env.status]}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
      `request-id: ${rid}\r\nconnection: close\r\n\r\n${body}`,
  )
  // A lingering close: what the client still sends is read (and refused by the parser) until it closes its side,
  // so the kernel does not reset the connection under the answer; bounded like the one after an early 413.
  setTimeout(() => socket.destroy(), LINGER_MS).unref()
}

/** A socket is answered once: the parser reports the same error again for every later read. */
const answered = new WeakSet<Duplex>()

function describe(err: ClientError, maxHeaderBytes: number): ApiError {
  if (err.code === 'HPE_HEADER_OVERFLOW') return fail('headers_too_large', maxHeaderBytes / 1024)
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') return fail('request_timeout')
  return fail('malformed_http', err.reason ?? err.message, err.code)
}
