import type { ServerResponse } from 'node:http'
import type { After, Headers, ResponseStream, Unread } from '../../transport.js'
import { gone, whenUnreadEnds, type Life } from '../life.js'

const writable = (life: Life) => !life.aborted && !life.ended

/** A whole response, with its `content-length`. */
export function send(res: ServerResponse, life: Life, status: number, headers: Headers, body: Uint8Array, after: After): void {
  if (!writable(life)) return
  const h: Headers = { ...headers, 'content-length': String(body.byteLength) }
  if (typeof after === 'object' && !after.ended) {
    linger(res, life, status, h, body, after)
    return
  }
  if (after === 'close') h.connection = 'close'
  res.writeHead(status, h)
  res.end(body)
  life.ended = true
}

/** Headers only, with the length the body would have had; node sends no body to a HEAD request. */
export function sendHead(res: ServerResponse, life: Life, status: number, headers: Headers, length: number | undefined): void {
  if (!writable(life)) return
  const h: Headers = { ...headers }
  if (length !== undefined) h['content-length'] = String(length)
  res.writeHead(status, h)
  res.end()
  life.ended = true
}

/**
 * The whole answer goes out at once (its `content-length` is met, so the client has it complete), but the response
 * is ended only once the unread body has arrived: node closes a `connection: close` response as soon as it ends, and
 * closing while the client still sends would reset the connection under the answer. Past the bounds, the
 * connection is destroyed instead.
 */
function linger(res: ServerResponse, life: Life, status: number, headers: Headers, body: Uint8Array, unread: Unread): void {
  res.writeHead(status, { ...headers, connection: 'close' })
  res.write(body)
  whenUnreadEnds(life, unread, (ended) => {
    life.ended = true
    if (ended) res.end()
    else {
      res.destroy()
      gone(life)
    }
  })
}

/**
 * A chunked response (or, with `length`, one of exactly that many bytes); node buffers what the socket does not take
 * and says when it drained.
 */
export function stream(res: ServerResponse, life: Life, status: number, headers: Headers, length?: number): ResponseStream {
  if (writable(life)) res.writeHead(status, length === undefined ? headers : { ...headers, 'content-length': String(length) })
  let drained: (() => void) | undefined
  res.on('drain', () => {
    if (writable(life)) drained?.()
  })
  return {
    write: (chunk) => writable(life) && res.write(chunk),
    onWritable: (cb) => void (drained = cb),
    end(last) {
      if (!writable(life)) return
      life.ended = true
      res.end(last)
    },
  }
}
