import { STATUS_CODES } from 'node:http'
import type { HttpResponse } from 'uWebSockets.js'
import type { After, Headers, ResponseStream, Unread } from '../../transport.js'
import { gone, whenUnreadEnds, type Life } from '../life.js'

/** uWS writes the status line as given. */
const statusLine = (status: number) => `${status} ${STATUS_CODES[status] ?? 'Status'}`

/**
 * Runs `fn` on a live response in one cork (one write to the socket, and the only way uWS accepts writes from
 * outside its own callbacks). False when the response is gone; a throw means uWS invalidated it meanwhile.
 */
export function corked(res: HttpResponse, life: Life, fn: () => void): boolean {
  if (life.aborted || life.ended) return false
  try {
    res.cork(fn)
    return true
  } catch {
    gone(life)
    return false
  }
}

function head(res: HttpResponse, status: number, headers: Headers): void {
  res.writeStatus(statusLine(status))
  for (const k in headers) res.writeHeader(k, headers[k]!)
}

/** A whole response; uWS adds `content-length`. */
export function send(res: HttpResponse, life: Life, status: number, headers: Headers, body: Uint8Array, after: After): void {
  const lingering = typeof after === 'object' && !after.ended
  corked(res, life, () => {
    head(res, status, headers)
    if (lingering) return linger(res, life, body, after)
    res.end(body, after === 'close')
    life.ended = true
  })
}

/**
 * Headers only, with the length the body would have had (HEAD). The length is written as a header: the installed
 * build's `endWithoutBody(n)` waits for n body bytes and never completes the response (the next request on the
 * connection then hangs), and `endWithoutBody(0)` adds its own `Content-Length: 0`; without an argument it writes
 * no length and completes.
 */
export function sendHead(res: HttpResponse, life: Life, status: number, headers: Headers, length: number | undefined): void {
  corked(res, life, () => {
    head(res, status, length === undefined ? headers : { ...headers, 'content-length': String(length) })
    res.endWithoutBody()
    life.ended = true
  })
}

/**
 * uWS cannot close a connection after a response ended, and ending one with `close` closes at once. So the body
 * goes out with a declared length one byte longer than what is written, the last byte (a newline, which JSON
 * allows) held back: the response stays open on our side until the unread body ends, and is then completed; past
 * the bounds, the connection is closed instead.
 */
function linger(res: HttpResponse, life: Life, body: Uint8Array, unread: Unread): void {
  const total = body.byteLength + 1
  res.writeHeader('connection', 'close')
  res.tryEnd(body, total)
  whenUnreadEnds(life, unread, (ended) => {
    if (ended) corked(res, life, () => res.tryEnd('\n', total))
    else res.close()
    life.ended = true
  })
}

/**
 * A chunked response. With onWritable registered, uWS drains what it holds only through our writes, so when it asks
 * and the caller has nothing to write, `filler` goes out.
 */
export function stream(res: HttpResponse, life: Life, status: number, headers: Headers, filler: string): ResponseStream {
  let drained: (() => void) | undefined
  let wrote = false
  let lastOk = true
  // The status and headers go out in the same cork as the first chunk: one packet, not two.
  let started = false
  const start = () => {
    if (started) return
    started = true
    head(res, status, headers)
    res.onWritable(() => {
      if (life.aborted || life.ended) return true
      wrote = false
      drained?.()
      if (!wrote) write(filler)
      return lastOk
    })
  }
  const write = (chunk: string | Uint8Array): boolean => {
    wrote = true
    lastOk = false
    corked(res, life, () => {
      start()
      lastOk = res.write(chunk)
    })
    return lastOk
  }
  return {
    write,
    onWritable: (cb) => void (drained = cb),
    end(last) {
      corked(res, life, () => {
        start()
        res.end(last ?? '')
      })
      life.ended = true
    },
  }
}

/**
 * A response of exactly `length` bytes, each chunk offered with `tryEnd` (which frames the body by `length`); what
 * uWS does not take is offered again from where it stopped once the socket drains (uWS's own streaming pattern).
 */
export function sized(res: HttpResponse, life: Life, status: number, headers: Headers, length: number): ResponseStream {
  let drained: (() => void) | undefined
  let pending: Uint8Array | undefined
  /** The write offset at which `pending` starts. */
  let base = 0
  let started = false
  const offer = (chunk: Uint8Array): boolean => {
    const [ok, done] = res.tryEnd(chunk, length)
    if (done) life.ended = true
    return ok || done
  }
  const start = () => {
    if (started) return
    started = true
    head(res, status, headers)
    res.onWritable((offset) => {
      if (life.aborted || life.ended || !pending) return true
      const ok = offer(pending.subarray(offset - base))
      if (ok) {
        pending = undefined
        drained?.()
      }
      return ok
    })
  }
  return {
    write(chunk) {
      const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk
      let ok = false
      corked(res, life, () => {
        start()
        base = res.getWriteOffset()
        ok = offer(bytes)
        if (!ok) pending = bytes
      })
      return ok
    },
    onWritable: (cb) => void (drained = cb),
    end() {
      if (life.ended) return
      corked(res, life, () => {
        if (!started && length === 0) {
          head(res, status, headers)
          res.end()
          life.ended = true
        } else {
          // Fewer bytes than promised: the client must not take a short body for a whole one.
          life.ended = true
          res.close()
        }
      })
    },
  }
}
