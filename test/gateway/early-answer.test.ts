import t from 'tap'
import http from 'node:http'
import net from 'node:net'
import { connect } from '@nats-io/transport-node'
import { pino } from 'pino'
import { startGateway } from '../../gateway/server.js'
import { actorAccess } from '../../supervisor/actor-access.js'
import '../helpers/keepalive.js'
import { startNats } from '../helpers/nats.js'
import { TRANSPORT } from '../helpers/transport.js'

// A 413 goes out while the client is still sending; the server then reads and drops the rest of the body before
// it lets the connection go (a lingering close). Closing at once made the kernel reset the connection, and
// clients that had not read the answer yet saw EPIPE or ECONNRESET instead of it.
const nats = await startNats()
const nc = await connect({ servers: nats.url })
const gw = await startGateway({ nc, actors: actorAccess(nc), log: pino({ level: 'silent' }), port: 0, transport: TRANSPORT })
t.teardown(async () => {
  gw.close()
  await nc.close()
  await nats.stop()
})

const OVER = gw.bodyLimit + 1024 * 1024
const CHUNK = Buffer.alloc(256 * 1024, 0x20)

interface Outcome {
  /** Everything the server sent. */
  got: string
  /** The socket error, if any, and whether the status line had arrived before it. */
  error?: string
  errorAfterStatus?: boolean
  /** Bytes of body the client wrote before it stopped. */
  sent: number
}

/**
 * Sends a body of `size` bytes in 256 KiB writes, each after the previous one drained, whatever the server
 * says meanwhile: the client that reads only after sending everything is the one a reset hurts. `stopAfter`
 * stops writing (without ending) once that many bytes went out.
 */
function upload(mode: 'length' | 'chunked', size: number, stopAfter = Infinity): Promise<Outcome> {
  const sock = net.connect(gw.port, '127.0.0.1')
  const out: Outcome = { got: '', sent: 0 }
  const head =
    `POST /v1/environments HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\n` +
    (mode === 'length' ? `content-length: ${size}\r\n\r\n` : 'transfer-encoding: chunked\r\n\r\n')
  sock.on('data', (d) => (out.got += d))
  sock.on('error', (e: NodeJS.ErrnoException) => {
    out.error ??= e.code ?? e.message
    out.errorAfterStatus ??= out.got.startsWith('HTTP/1.1 ')
  })
  /** The client wrote all it meant to (the last write was handed to the kernel). */
  let written = false
  let check = () => {}
  const pump = () => {
    if (sock.destroyed || out.sent >= Math.min(size, stopAfter)) {
      const done = () => {
        written = true
        check()
      }
      if (!sock.destroyed && out.sent >= size && mode === 'chunked') sock.write('0\r\n\r\n', done)
      else done()
      return
    }
    const piece = CHUNK.subarray(0, Math.min(CHUNK.length, size - out.sent))
    out.sent += piece.length
    const framed = mode === 'chunked' ? [`${piece.length.toString(16)}\r\n`, piece, '\r\n'] : [piece]
    for (const [i, p] of framed.entries()) sock.write(p, i === framed.length - 1 ? () => setImmediate(pump) : undefined)
  }
  sock.write(head, pump)
  return new Promise((resolve) => {
    // Done once the response is complete (its declared length arrived; the server may keep the connection) and the
    // client wrote all it meant to. uWS completes the answer only once the body ended (gateway/adapters/uws/response.ts);
    // node completes it at once and reads on: either way the client must be able to send everything.
    check = () => {
      const end = out.got.indexOf('\r\n\r\n')
      const length = /\r\ncontent-length: (\d+)\r\n/i.exec(out.got.slice(0, end + 2))?.[1]
      if (end < 0 || length === undefined || !written) return
      if (Buffer.byteLength(out.got.slice(end + 4)) >= Number(length)) {
        sock.destroy()
        resolve(out)
      }
    }
    sock.on('data', check)
    sock.on('close', () => resolve(out))
  })
}

function envelopeOf(got: string) {
  const body = got.slice(got.indexOf('\r\n\r\n') + 4)
  return JSON.parse(body)
}

for (const mode of ['length', 'chunked'] as const) {
  t.test(`a ${OVER}-byte body (${mode === 'length' ? 'content-length' : 'chunked'}) gets its 413 whole, 20 times in a row`, async (t) => {
    for (let run = 0; run < 20; run++) {
      const o = await upload(mode, OVER)
      t.equal(o.error, undefined, `run ${run}: no socket error (${o.error}, after status: ${o.errorAfterStatus})`)
      t.match(o.got, /^HTTP\/1\.1 413 /, `run ${run}: status line`)
      const env = envelopeOf(o.got)
      t.equal(env.type, 'error')
      t.equal(env.error.type, 'request_too_large')
      t.match(env.error.message, String(gw.bodyLimit))
      t.match(env.request_id, /^req_/)
      t.equal(o.sent, OVER, `run ${run}: the whole body could be sent`)
    }
  })
}

t.test('a client that stops sending still gets the 413 at once, and the server lets go later', async (t) => {
  const o = await upload('length', OVER, 1024 * 1024)
  t.match(o.got, /^HTTP\/1\.1 413 /)
  t.equal(envelopeOf(o.got).error.type, 'request_too_large', 'the envelope arrived before the close')
})

t.test("node's http client sees the 413 and its envelope", async (t) => {
  for (let run = 0; run < 5; run++) {
    const { status, body } = await new Promise<{ status?: number; body: string }>((resolve) => {
      const req = http.request({
        host: '127.0.0.1',
        port: gw.port,
        method: 'POST',
        path: '/v1/environments',
        headers: { 'content-type': 'application/json', 'content-length': OVER },
      })
      let sent = 0
      const pump = () => {
        if (req.destroyed || sent >= OVER) return void (sent >= OVER && req.end())
        sent += CHUNK.length
        req.write(sent <= OVER ? CHUNK : CHUNK.subarray(0, CHUNK.length - (sent - OVER)), () => setImmediate(pump))
      }
      req.on('response', (res) => {
        let body = ''
        res.on('data', (d) => (body += d))
        res.on('end', () => resolve({ status: res.statusCode, body }))
        res.on('error', () => resolve({ status: res.statusCode, body }))
      })
      req.on('error', (e) => resolve({ body: `error ${(e as NodeJS.ErrnoException).code}` }))
      pump()
    })
    t.equal(status, 413, `run ${run}: ${body.slice(0, 80)}`)
    t.equal(JSON.parse(body).error.type, 'request_too_large')
  }
})

t.test('the server still serves after all that', async (t) => {
  const r = await fetch(`http://127.0.0.1:${gw.port}/healthz`)
  t.equal(r.status, 200)
})
