import t from 'tap'
import net from 'node:net'
import { Stream } from '@anthropic-ai/sdk/core/streaming'
import { loadTransport } from '../../gateway/adapters/index.js'
import type { ResponseState } from '../../gateway/http.js'
import { formatSse, startSse, type SseStream } from '../../gateway/sse.js'
import type { Exchange } from '../../gateway/transport.js'
import { TRANSPORT } from '../helpers/transport.js'

// startSse over the transport under test (TROUPE_HTTP, default uws), with nothing of the gateway around it.

/** Failure guard only: every wait below ends on an event, this just keeps a broken build from hanging. */
function guard<T>(p: Promise<T>, what: string, ms = 10_000): Promise<T> {
  let timer: NodeJS.Timeout
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms)
  })
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer))
}

interface Opened {
  stream: SseStream
  state: ResponseState
  /** Resolves when the transport reported that the client went away. */
  aborted: Promise<void>
}

// Requests hand each stream they open to the next test waiting for one.
const waiting: Array<(o: Opened) => void> = []
const nextStream = () => new Promise<Opened>((resolve) => waiting.push(resolve))

function onRequest(ex: Exchange) {
  const q = new URLSearchParams(ex.query)
  const state: ResponseState = { aborted: false, done: false }
  const hook = q.get('hook') !== '0'
  let abortedNow!: () => void
  const aborted = new Promise<void>((r) => (abortedNow = r))
  ex.onAbort(() => {
    state.aborted = true
    if (hook) state.onAbort?.()
    abortedNow()
  })
  const stream = startSse(ex, state, {
    requestId: 'req_test',
    keepaliveMs: Number(q.get('keepalive') ?? 0),
    ...(q.has('max') ? { maxBufferedBytes: Number(q.get('max')) } : {}),
    extraHeaders: { 'x-extra': 'yes' },
  })
  const take = waiting.shift()
  if (!take) throw new Error('no test waiting for a stream')
  take({ stream, state, aborted })
}
const listen = await loadTransport(TRANSPORT)
const server = await listen({ host: '127.0.0.1', port: 0, handler: onRequest })
const port = server.port
const base = `http://127.0.0.1:${port}`
t.teardown(() => server.close())

/** Opens `/sse?query` with fetch; resolves once both the response headers and the server-side stream exist. */
async function open(query: string, signal?: AbortSignal): Promise<{ opened: Opened; res: Response }> {
  const [opened, res] = await guard(Promise.all([nextStream(), fetch(`${base}/sse?${query}`, { signal })]), 'headers')
  return { opened, res }
}

/** Reads a fetch body as text, exposing what has arrived so far. */
function textReader(res: Response) {
  const reader = res.body!.getReader()
  const dec = new TextDecoder()
  let text = ''
  let ended = false
  const until = async (pred: (text: string) => boolean, what: string) => {
    while (!pred(text)) {
      if (ended) throw new Error(`stream ended before ${what}: ${JSON.stringify(text)}`)
      const { done, value } = await guard(reader.read(), what)
      if (done) ended = true
      else text += dec.decode(value, { stream: true })
    }
    return text
  }
  return { until, toEnd: () => until(() => ended, 'end of stream') }
}

/** A raw client that sends the request and then never reads (kernel buffers fill, the transport reports backpressure). */
function stalledClient(query: string) {
  const sock = net.connect(port, '127.0.0.1')
  sock.pause()
  sock.write(`GET /sse?${query} HTTP/1.1\r\nhost: localhost\r\n\r\n`)
  const closed = new Promise<void>((r) => sock.once('close', () => r()))
  sock.on('error', () => {})
  return { sock, closed }
}

const tick = () => new Promise<void>((r) => setImmediate(r))

t.test('formatSse', async (t) => {
  t.equal(formatSse('agent.message', { a: 1 }, 'sevt_1'), 'event: agent.message\nid: sevt_1\ndata: {"a":1}\n\n')
  t.equal(formatSse('ping', {}), 'event: ping\ndata: {}\n\n', 'no id line without an id')
  t.equal(formatSse('x', { text: 'two\nlines\r\n' }), 'event: x\ndata: {"text":"two\\nlines\\r\\n"}\n\n', 'JSON stays one line')
  t.equal(formatSse('a\r\nb', 1, 'i\nd'), 'event: ab\nid: id\ndata: 1\n\n', 'CR/LF stripped from event and id')
  t.equal(formatSse('x', undefined), 'event: x\ndata: null\n\n')
})

t.test('raw framing: headers first, keepalive comment, events, close', async (t) => {
  const { opened, res } = await open('keepalive=20')
  const { stream } = opened
  // fetch resolved before any send: the header block went out on its own.
  t.equal(res.status, 200)
  t.equal(res.headers.get('content-type'), 'text/event-stream')
  t.equal(res.headers.get('cache-control'), 'no-cache')
  t.equal(res.headers.get('connection'), 'keep-alive')
  t.equal(res.headers.get('x-accel-buffering'), 'no')
  t.equal(res.headers.get('request-id'), 'req_test')
  t.equal(res.headers.get('x-extra'), 'yes')
  t.equal(opened.state.done, true, 'state marked done so nobody sends a JSON reply')
  const body = textReader(res)
  await body.until((s) => s.includes(': keepalive\n\n'), 'a keepalive')
  // All of this runs in one tick, so no keepalive can land between these messages.
  t.equal(stream.send('session.status_running', { type: 'session.status_running', id: 'sevt_1' }, 'sevt_1'), true)
  t.equal(stream.send('agent.message', { id: 'sevt_2', content: [{ type: 'text', text: 'a\nb' }] }, 'sevt_2'), true)
  t.equal(stream.send('odd\nname', { n: 3 }), true)
  t.equal(stream.comment('hello'), true)
  stream.close()
  stream.close()
  t.equal(stream.closed, true)
  t.equal(stream.closeReason, 'closed')
  t.equal(stream.send('late', {}), false, 'no writes after close')
  const text = await body.toEnd()
  const events =
    'event: session.status_running\nid: sevt_1\ndata: {"type":"session.status_running","id":"sevt_1"}\n\n' +
    'event: agent.message\nid: sevt_2\ndata: {"id":"sevt_2","content":[{"type":"text","text":"a\\nb"}]}\n\n' +
    'event: oddname\ndata: {"n":3}\n\n' +
    ': hello\n\n'
  t.match(text, /^: open\n\n(: keepalive\n\n)+/, 'opening comment, then keepalives')
  t.equal(text.replace(/^: open\n\n(: keepalive\n\n)+/, ''), events, 'exact framing')
  await guard(stream.done, 'done')
})

t.test("the official client's SSE decoder yields the JSON objects", async (t) => {
  const { opened, res } = await open('keepalive=0')
  const { stream } = opened
  const controller = new AbortController()
  const items: unknown[] = []
  const reading = (async () => {
    for await (const item of Stream.fromSSEResponse<unknown>(res, controller)) items.push(item)
  })()
  const sent = [
    { type: 'session.status_running', id: 'sevt_1', processed_at: '2026-01-01T00:00:00Z' },
    { type: 'agent.message', id: 'sevt_2', content: [{ type: 'text', text: 'multi\nline\r\n' }] },
    { type: 'session.status_idle', id: 'sevt_3', stop_reason: { type: 'end_turn' } },
  ]
  stream.send(sent[0]!.type, sent[0], sent[0]!.id)
  stream.comment()
  stream.send(sent[1]!.type, sent[1], sent[1]!.id)
  stream.send(sent[2]!.type, sent[2]) // no id line: still decoded
  stream.close()
  await guard(reading, 'SDK iteration to finish')
  t.same(items, sent)
})

t.test('client disconnect resolves done; later writes return false', async (t) => {
  const ac = new AbortController()
  const { opened } = await open('keepalive=0', ac.signal)
  const { stream } = opened
  t.equal(stream.send('x', { n: 1 }, 'sevt_1'), true)
  ac.abort()
  await guard(stream.done, 'done after disconnect')
  t.equal(stream.closed, true)
  t.equal(stream.closeReason, 'aborted')
  t.equal(opened.state.onAbort, undefined, 'hook removed')
  t.equal(stream.send('x', { n: 2 }), false)
  t.equal(stream.comment(), false)
  stream.close() // must not touch the dead response
})

t.test('without the onAbort hook, the next write notices the abort', async (t) => {
  const client = stalledClient('hook=0&keepalive=0')
  const { stream, aborted } = await guard(nextStream(), 'stream')
  client.sock.destroy()
  await guard(aborted, 'the abort callback')
  t.equal(stream.closed, false, 'nobody told the stream yet')
  t.equal(stream.send('x', {}), false)
  t.equal(stream.closeReason, 'aborted')
  await guard(stream.done, 'done')
})

t.test('already answered or aborted: a closed stream, the exchange untouched', async (t) => {
  const res = new Proxy(
    {},
    {
      get: () => {
        throw new Error('exchange touched')
      },
    },
  ) as Exchange
  const answered = startSse(res, { aborted: false, done: true }, { requestId: 'r' })
  t.equal(answered.closed, true)
  t.equal(answered.send('x', {}), false)
  const gone = startSse(res, { aborted: true, done: false }, { requestId: 'r' })
  t.equal(gone.closeReason, 'aborted')
  gone.close()
  await gone.done
})

/**
 * Decodes a raw HTTP/1.1 chunked response; returns the body once the terminating chunk arrived. uWS writes the CRLF
 * that ends a chunk before the next size line, node after the data: either way it sits between two chunks.
 */
function dechunk(raw: Buffer): string | undefined {
  let at = raw.indexOf('\r\n\r\n')
  if (at < 0) return undefined
  at += 4
  const parts: Buffer[] = []
  for (;;) {
    if (raw.length < at + 2) return undefined
    if (raw.toString('latin1', at, at + 2) === '\r\n') at += 2
    const eol = raw.indexOf('\r\n', at)
    if (eol < 0) return undefined
    if (!/^[0-9a-f]+$/i.test(raw.toString('latin1', at, eol))) throw new Error(`bad chunk framing at ${at}`)
    const size = parseInt(raw.toString('latin1', at, eol), 16)
    if (size === 0) return Buffer.concat(parts).toString('utf8')
    if (raw.length < eol + 2 + size) return undefined
    parts.push(raw.subarray(eol + 2, eol + 2 + size))
    at = eol + 2 + size
  }
}

t.test('backpressure: queued messages flush in order once the client reads', async (t) => {
  const client = stalledClient(`keepalive=0&max=${256 * 1024 * 1024}`)
  const { stream } = await guard(nextStream(), 'stream')
  const pad = 'p'.repeat(16 * 1024)
  const n = 1024 // 16 MiB: well past what the kernel buffers for a client that does not read
  let accepted = 0
  for (let i = 0; i < n; i++) {
    if (stream.send('m', { i, pad }, `sevt_${i}`)) accepted++
    if (i % 64 === 63) await tick()
  }
  t.equal(accepted, n, 'every send accepted while under the bound')
  t.ok(stream.bufferedBytes > 0, `queue in use (${stream.bufferedBytes} bytes)`)
  stream.close()
  t.equal(stream.closeReason, 'closed')
  const chunks: Buffer[] = []
  let size = 0
  const body = await guard(
    new Promise<string>((resolve, reject) => {
      let tail = ''
      client.sock.on('data', (d: Buffer) => {
        chunks.push(d)
        size += d.length
        // Decode only once the terminating chunk may have arrived: decoding 16 MiB on every read is quadratic.
        tail = (tail + d.toString('latin1', Math.max(0, d.length - 8))).slice(-8)
        if (!tail.endsWith('0\r\n\r\n')) return
        try {
          const text = dechunk(Buffer.concat(chunks, size))
          if (text !== undefined) resolve(text)
        } catch (e) {
          reject(e)
        }
      })
      client.sock.resume()
    }),
    'whole body',
    30_000,
  )
  client.sock.destroy()
  // While draining, uWS may need a write to push its own buffer out: those are bare comments.
  const rest = body.replace(/^: open\n\n/, '').replaceAll(':\n\n', '')
  let expected = ''
  for (let i = 0; i < n; i++) expected += formatSse('m', { i, pad }, `sevt_${i}`)
  t.equal(rest.length, expected.length)
  t.ok(rest === expected, 'every message, in order, intact')
})

t.test('backpressure bound: a client that never reads is dropped', async (t) => {
  const client = stalledClient('keepalive=0') // default bound, 8 MiB
  const { stream, aborted } = await guard(nextStream(), 'stream')
  const pad = 'p'.repeat(64 * 1024)
  let sent = 0
  for (let i = 0; sent < 64 * 1024 * 1024; i++) {
    if (!stream.send('m', { i, pad })) break
    sent += pad.length
    if (i % 16 === 15) await tick()
  }
  t.equal(stream.closeReason, 'slow_consumer')
  t.ok(sent > 8 * 1024 * 1024 && sent < 24 * 1024 * 1024, `gave up after ${(sent / 1048576).toFixed(1)} MiB`)
  t.equal(stream.bufferedBytes, 0, 'queue released')
  await guard(stream.done, 'done')
  await guard(aborted, 'the abort callback after close')
  // A paused socket never learns of FIN/RST: read (and discard) what is left to see the server hang up.
  client.sock.resume()
  await guard(client.closed, 'client socket closed')
})
