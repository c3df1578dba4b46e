import net from 'node:net'
import t from 'tap'
import { HEADERS_TIMEOUT_MS } from '../../gateway/adapters/node/listen.js'
import { raw } from '../helpers/troupe.js'
import { stack } from '../helpers/stack.js'

// The node:http adapter's request timeout: a client that sends half a request and then nothing gets the API's 408
// envelope once the headers are overdue (node checks every 5 s), and the connection closes.

const s = await stack({ env: { TROUPE_HTTP: 'node' } })

/** Everything the server writes on one connection until it closes it; bounded, so a server that never answers fails. */
function halfRequest(port: number, head: string, boundMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1')
    let got = ''
    const timer = setTimeout(() => {
      sock.destroy()
      reject(new Error(`no answer within ${boundMs} ms; got ${JSON.stringify(got)}`))
    }, boundMs)
    sock.on('data', (d) => (got += d))
    sock.on('error', () => undefined)
    sock.on('close', () => {
      clearTimeout(timer)
      resolve(got)
    })
    sock.write(head)
  })
}

t.test('headers that never finish: 408 request_timeout, the JSON envelope, then the connection closes', async (t) => {
  const port = Number(new URL(s.url).port)
  // Generous: the headers timeout, node's 5 s check interval, and a loaded machine.
  const answer = await halfRequest(port, 'GET /v1/agents HTTP/1.1\r\nHost: x\r\nx-half: ', HEADERS_TIMEOUT_MS + 30_000)
  const [head, body] = answer.split('\r\n\r\n')
  t.match(head, /^HTTP\/1\.1 408 Request Timeout\r\n/)
  t.match(head, /\r\ncontent-type: application\/json\r\n/)
  t.match(head, /\r\nconnection: close(\r\n|$)/)
  const rid = /\r\nrequest-id: (req_\w+)/.exec(head!)?.[1]
  t.ok(rid, 'a request id')
  t.same(JSON.parse(body!), {
    type: 'error',
    error: { type: 'invalid_request_error', message: 'The request did not arrive in time' },
    request_id: rid,
  })
  t.equal((await raw(s.url, 'GET', '/healthz')).status, 200, 'the server serves on')
})
