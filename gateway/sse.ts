import type { ResponseState } from './http.js'
import type { Exchange, Headers, ResponseStream } from './transport.js'

/**
 * Server-sent events over any transport's streamed response, framed as WIRE.md §7.3 and DECISIONS.md ("Sessions
 * and events") ask: every message has an `event:` line and, when known, `id: <event id>`; keepalives are comment
 * lines.
 *
 * Aborts: the gateway registers one abort callback per exchange before anything async; `startSse` installs
 * `state.onAbort` (gateway/http.ts), which that callback runs after setting `state.aborted`. Without that call the
 * stream still notices `state.aborted` on its next write or keepalive tick (so `done` resolves at most one keepalive
 * interval late); the transports ignore writes to a response that is gone.
 */

export type SseCloseReason = 'closed' | 'aborted' | 'slow_consumer'

export interface SseStream {
  /** Writes one message: `event: <event>\nid: <id>\ndata: <one-line JSON>\n\n`; id omitted when undefined. Returns false once the client is gone. */
  send(event: string, data: unknown, id?: string): boolean
  /** Same framing for data that is already JSON text (a stored event's payload), written as is. */
  sendRaw(event: string, json: string, id?: string): boolean
  /** A message framed already (`formatSseRaw`), e.g. one frame written to many streams. Not copied: do not change it. */
  sendFrame(frame: string | Uint8Array): boolean
  /** Comment line, `: keepalive\n\n` by default. */
  comment(text?: string): boolean
  /** Ends the response after whatever is still buffered (no more writes). Idempotent. */
  close(): void
  readonly closed: boolean
  /** Why the stream closed: close() was called, the client went away, or it fell too far behind. */
  readonly closeReason: SseCloseReason | undefined
  /** Bytes held in our queue while the transport reports backpressure (it also holds what it accepted). */
  readonly bufferedBytes: number
  /** Resolves when the client disconnects or the stream is closed. */
  readonly done: Promise<void>
}

export interface SseOptions {
  requestId: string
  /** Comment keepalive interval; 0 disables. Default 15000. */
  keepaliveMs?: number
  /** A client that lets more than this pile up in our queue is dropped. Default 8 MiB. */
  maxBufferedBytes?: number
  extraHeaders?: Record<string, string>
}

const oneLine = (s: string) => s.replace(/[\r\n]/g, '')

/** One SSE message. JSON.stringify never emits a raw CR/LF, so `data` is always a single line. */
export function formatSse(event: string, data: unknown, id?: string): string {
  const idLine = id === undefined ? '' : `id: ${oneLine(id)}\n`
  return `event: ${oneLine(event)}\n${idLine}data: ${JSON.stringify(data) ?? 'null'}\n\n`
}

/**
 * One SSE message whose data is already JSON text. Stored payloads are single-line JSON; should one hold a line
 * break anyway (legal JSON whitespace), each line becomes its own `data:` line, which the decoder joins with `\n`.
 */
export function formatSseRaw(event: string, json: string, id?: string): string {
  const idLine = id === undefined ? '' : `id: ${oneLine(id)}\n`
  return `event: ${oneLine(event)}\n${idLine}data: ${json.replace(/\r\n|\r|\n/g, '\ndata: ')}\n\n`
}

export const formatComment = (text = 'keepalive') => `: ${oneLine(text)}\n\n`

/** What waited in a stream's queue, as one write. */
function joinQueued(queue: (string | Uint8Array)[]): string | Uint8Array {
  if (queue.every((c) => typeof c === 'string')) return queue.join('')
  return Buffer.concat(queue.map((c) => (typeof c === 'string' ? Buffer.from(c) : c)))
}

/** The head of an event stream: what a GET starts with, and all a HEAD gets. */
export function sseHeaders(requestId: string, extra?: Headers): Headers {
  return {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
    'request-id': requestId,
    ...extra,
  }
}

/** A comment the client ignores, written when uWS wants a write to drain and nothing is queued. */
const FILLER = ':\n\n'

/**
 * Starts an SSE response: call it synchronously in the handler, or later once the exchange's abort callback is
 * registered. Marks `state.done` so nothing else replies. Transports send the header block with the first body
 * chunk, so an opening comment (`: open`) goes out at once: the official client's timeout runs until headers arrive.
 */
export function startSse(ex: Exchange, state: ResponseState, opts: SseOptions): SseStream {
  const maxBuffered = opts.maxBufferedBytes ?? 8 * 1024 * 1024
  const keepaliveMs = opts.keepaliveMs ?? 15_000
  let reason: SseCloseReason | undefined
  let resolveDone!: () => void
  const done = new Promise<void>((r) => (resolveDone = r))
  let queue: (string | Uint8Array)[] = []
  let queued = 0
  let backpressured = false
  // What this tick wrote goes out as one write when the tick's microtasks are done: the events of one stored message
  // arrive together, and a write each cost a send each.
  let tick: (string | Uint8Array)[] = []
  let tickBytes = 0
  let timer: NodeJS.Timeout | undefined
  let out: ResponseStream | undefined

  const finish = (why: SseCloseReason) => {
    if (reason) return
    reason = why
    if (timer) clearInterval(timer)
    queue = []
    queued = 0
    if (state.onAbort === onAbort) state.onAbort = undefined
    resolveDone()
  }
  const onAbort = () => finish('aborted')
  const open = (): boolean => {
    if (state.aborted) finish('aborted')
    return !reason
  }
  const send = (chunk: string | Uint8Array, size: number): void => {
    if (backpressured) {
      queue.push(chunk)
      queued += size
      if (queued <= maxBuffered) return
      finish('slow_consumer')
      ex.close()
      return
    }
    backpressured = !out!.write(chunk)
    // A write to a response that is gone reports backpressure; the abort callback (maybe just run) says which.
    open()
  }
  const endTick = () => {
    const chunks = tick
    const size = tickBytes
    tick = []
    tickBytes = 0
    if (open() && chunks.length) send(chunks.length === 1 ? chunks[0]! : joinQueued(chunks), size)
  }
  const write = (chunk: string | Uint8Array): boolean => {
    if (!open()) return false
    const size = typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.byteLength
    state.bytesOut! += size
    if (!tick.length) queueMicrotask(endTick)
    tick.push(chunk)
    tickBytes += size
    return true
  }

  const stream: SseStream = {
    send: (event, data, id) => write(formatSse(event, data, id)),
    sendRaw: (event, json, id) => write(formatSseRaw(event, json, id)),
    sendFrame: write,
    comment: (text) => write(formatComment(text)),
    close() {
      if (!open()) return
      const rest = joinQueued([...queue, ...tick])
      tick = []
      out!.end(rest)
      finish('closed')
    },
    get closed() {
      return reason !== undefined
    },
    get closeReason() {
      return reason
    },
    get bufferedBytes() {
      return queued
    },
    done,
  }
  if (state.aborted || state.done) {
    finish(state.aborted ? 'aborted' : 'closed')
    return stream
  }
  state.done = true
  state.onAbort = onAbort
  state.status = 200
  state.bytesOut = 0
  state.streaming = done
  out = ex.stream(200, sseHeaders(opts.requestId, opts.extraHeaders), FILLER)
  out.onWritable(() => {
    if (reason) return
    if (queued === 0) {
      backpressured = false
      return
    }
    const chunk = joinQueued(queue)
    queue = []
    queued = 0
    backpressured = !out!.write(chunk)
  })
  write(formatComment('open'))
  if (keepaliveMs > 0 && !reason) {
    timer = setInterval(() => stream.comment(), keepaliveMs)
    timer.unref()
  }
  return stream
}
