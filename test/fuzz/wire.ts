import net from 'node:net'
import type { HttpSpec, Outcome, ParsedResponse, RawWrite } from './types.js'

/** The admin key the fuzzed server is started with (TROUPE_ADMIN_KEY_FILE): sent on the admin routes' requests that carry no key of their own. */
export const FUZZ_ADMIN_KEY = 'fuzz-admin-key-0123456789abcdefghijklmnopqrstuv'

/**
 * HTTP/1.1 over a bare socket, one connection per exchange. fetch and node:http would normalise or refuse
 * exactly what the fuzzer is here to send (raw non-ASCII and lone surrogates on the request line, lower-case
 * or unknown methods, `..` segments, repeated framing headers), and would hide what the server really wrote.
 */

const CHUNK = 64 * 1024

/** The bytes of a well-framed request: request line as given, Host, the spec's headers, then the body. */
export function frame(spec: HttpSpec, port: number): RawWrite[] {
  const head = [`${spec.method} ${spec.target} HTTP/1.1`, `host: 127.0.0.1:${port}`]
  for (const [k, v] of spec.headers) head.push(`${k}: ${v}`)
  // The admin routes are fuzzed past their key check: with the server's admin key, unless the spec sends a key itself.
  if (spec.route.startsWith('/v1/admin/') && !spec.headers.some(([k]) => /^(x-api-key|authorization)$/i.test(k))) head.push(`x-api-key: ${FUZZ_ADMIN_KEY}`)
  const body = spec.body
  if (body && spec.chunked) head.push('transfer-encoding: chunked')
  else if (body) head.push(`content-length: ${body.length}`)
  const writes: RawWrite[] = [{ bytes: Buffer.from(`${head.join('\r\n')}\r\n\r\n`, 'utf8') }]
  if (!body) return writes
  if (!spec.chunked) {
    // Large bodies in pieces, so an early answer (413) is read while we still send.
    for (let i = 0; i < body.length; i += 1024 * 1024) writes.push({ bytes: body.subarray(i, i + 1024 * 1024) })
    return writes
  }
  for (let i = 0; i < body.length; i += CHUNK) {
    const part = body.subarray(i, i + CHUNK)
    writes.push({ bytes: Buffer.concat([Buffer.from(`${part.length.toString(16)}\r\n`), part, Buffer.from('\r\n')]) })
  }
  writes.push({ bytes: Buffer.from('0\r\n\r\n') })
  return writes
}

export interface ExchangeOptions {
  /** The first request's method: a HEAD response has no body. */
  method: string
  /** Close right after the last write (a request left half-sent). */
  hangUp: boolean
  timeoutMs: number
  /**
   * After the first response, keep reading this long for what follows it: a body on a HEAD response, the
   * answer to a pipelined second request. 0 ends the exchange at the first complete response.
   */
  settleMs: number
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

export function exchange(port: number, writes: RawWrite[], opts: ExchangeOptions): Promise<Outcome> {
  return new Promise((resolve) => {
    const sock = net.connect(port, '127.0.0.1')
    let buf = Buffer.alloc(0)
    let settled = false
    let settleTimer: NodeJS.Timeout | undefined
    const finish = (o: Outcome) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      clearTimeout(settleTimer)
      sock.destroy()
      resolve(o)
    }
    const timer = setTimeout(() => finish(fromBuffer(buf, opts.method, false) ?? { kind: 'timeout', partial: buf }), opts.timeoutMs)

    const check = (closed: boolean) => {
      const got = fromBuffer(buf, opts.method, closed)
      if (got && (closed || opts.settleMs === 0)) return finish(got)
      if (got && !settleTimer) settleTimer = setTimeout(() => finish(fromBuffer(buf, opts.method, false) ?? got), opts.settleMs)
      if (!got && closed) finish({ kind: 'closed', partial: buf })
    }
    sock.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d])
      check(false)
    })
    sock.on('end', () => check(true))
    sock.on('close', () => check(true))
    sock.on('error', (err) => {
      // A reset after a complete answer is the server closing a connection it answered: keep the answer.
      const got = fromBuffer(buf, opts.method, true)
      finish(got ?? { kind: 'reset', partial: buf, error: (err as NodeJS.ErrnoException).code ?? err.message })
    })
    sock.once('connect', async () => {
      for (const w of writes) {
        if (settled || sock.destroyed) return
        if (w.delayMs) await sleep(w.delayMs)
        if (settled || sock.destroyed) return
        await new Promise<void>((r) => sock.write(w.bytes, () => r()))
      }
      if (opts.hangUp) finish({ kind: 'hung-up' })
    })
  })
}

/** The first response and what follows, or undefined while the first is incomplete. */
function fromBuffer(buf: Buffer, method: string, closed: boolean): Outcome | undefined {
  const first = parseResponse(buf, 0, method, closed)
  if (!first) return undefined
  const more: ParsedResponse[] = []
  let at = first.end
  for (;;) {
    // Pipelined answers are to requests we cannot see from here: read them as GETs.
    const next = parseResponse(buf, at, 'GET', closed)
    if (!next) break
    more.push(next.response)
    at = next.end
  }
  return { kind: 'response', response: first.response, more, trailing: buf.subarray(at) }
}

/** One response starting at `from`; 1xx interim answers are skipped. */
export function parseResponse(buf: Buffer, from: number, method: string, closed: boolean): { response: ParsedResponse; end: number } | undefined {
  let start = from
  for (;;) {
    const headEnd = buf.indexOf('\r\n\r\n', start)
    if (headEnd < 0) return undefined
    const head = buf.subarray(start, headEnd).toString('latin1')
    const m = /^HTTP\/\d(?:\.\d)? (\d{3})/.exec(head)
    if (!m) return undefined
    const status = Number(m[1])
    const headers: Record<string, string> = {}
    const headerCounts: Record<string, number> = {}
    for (const line of head.split('\r\n').slice(1)) {
      const i = line.indexOf(':')
      if (i <= 0) continue
      const k = line.slice(0, i).trim().toLowerCase()
      const v = line.slice(i + 1).trim()
      headers[k] = headers[k] === undefined ? v : `${headers[k]}, ${v}`
      headerCounts[k] = (headerCounts[k] ?? 0) + 1
    }
    const bodyStart = headEnd + 4
    if (status >= 100 && status < 200) {
      start = bodyStart
      continue
    }
    const done = (body: Buffer, end: number) => ({ response: { status, head, headers, headerCounts, body }, end })
    // `head` is read as HEAD too (the uWS gateway upper-cases methods and answers it without a body); a body
    // that does come then shows up as trailing bytes, which only an exact HEAD is failed for.
    if (method.toUpperCase() === 'HEAD' || status === 204 || status === 304) return done(Buffer.alloc(0), bodyStart)
    // An event stream never ends by itself (chunked or not): its head is the answer.
    if (/text\/event-stream/.test(headers['content-type'] ?? '')) return done(buf.subarray(bodyStart), buf.length)
    if (/chunked/i.test(headers['transfer-encoding'] ?? '')) {
      const chunked = dechunk(buf, bodyStart)
      return chunked ? done(chunked.body, chunked.end) : undefined
    }
    if (headers['content-length'] !== undefined) {
      const len = Number(headers['content-length'].split(',')[0])
      if (!Number.isFinite(len)) return done(buf.subarray(bodyStart), buf.length)
      if (buf.length >= bodyStart + len) return done(buf.subarray(bodyStart, bodyStart + len), bodyStart + len)
      // The server closed before the declared length: what came is what we have.
      return closed ? done(buf.subarray(bodyStart), buf.length) : undefined
    }
    return closed ? done(buf.subarray(bodyStart), buf.length) : undefined
  }
}

function dechunk(buf: Buffer, from: number): { body: Buffer; end: number } | undefined {
  const parts: Buffer[] = []
  let at = from
  for (;;) {
    const lineEnd = buf.indexOf('\r\n', at)
    if (lineEnd < 0) return undefined
    const size = parseInt(buf.subarray(at, lineEnd).toString('latin1'), 16)
    if (!Number.isFinite(size)) return { body: Buffer.concat(parts), end: buf.length }
    const dataStart = lineEnd + 2
    if (size === 0) {
      const trailerEnd = buf.indexOf('\r\n', dataStart)
      return trailerEnd < 0 ? undefined : { body: Buffer.concat(parts), end: trailerEnd + 2 }
    }
    if (buf.length < dataStart + size + 2) return undefined
    parts.push(buf.subarray(dataStart, dataStart + size))
    at = dataStart + size + 2
  }
}
