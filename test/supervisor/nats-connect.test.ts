import t from 'tap'
import { spawn } from 'node:child_process'
import { createServer } from 'node:http'
import { connectNats, parseNatsUrl, redact } from '../../supervisor/nats-connect.js'
import { freePort, natsServerBinary } from '../../supervisor/nats-server.js'
import { startNats } from '../helpers/nats.js'

/**
 * Why connecting to `url` failed. How soon a wrong NATS_URL is explained (seconds, not nats.js's 22 s of silence) is
 * `npm run bench -- stops`'s figure; here, what the explanation says.
 */
async function failure(url: string): Promise<{ message: string }> {
  try {
    const nc = await connectNats(url)
    await nc.close()
  } catch (err) {
    return { message: (err as Error).message }
  }
  throw new Error(`connected to ${url}`)
}

t.test('connection refused: nothing listens on the port', async (t) => {
  const url = `nats://127.0.0.1:${await freePort()}`
  const f = await failure(url)
  t.match(f.message, `nothing is listening at ${url}: is nats-server running?`)
})

t.test('unresolvable host', async (t) => {
  const f = await failure('nats://no-such-host.invalid:4222')
  t.match(f.message, /^cannot resolve host "no-such-host\.invalid" of nats:\/\/no-such-host\.invalid:4222 \(\w+\): check the host name/)
})

t.test('an HTTP server on the port is not NATS', async (t) => {
  const http = createServer((_, res) => res.end('hello'))
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r))
  // nats.js leaves the socket of a handshake that timed out open, and an HTTP server keeps a connection that
  // never sent a request for a minute: close it from this side.
  t.teardown(() => {
    http.closeAllConnections()
    http.close()
  })
  const url = `nats://127.0.0.1:${(http.address() as { port: number }).port}`
  const f = await failure(url)
  t.match(f.message, `${url} answered but is not a NATS server (it sent no NATS greeting)`)
})

t.test('a server that speaks first, but not NATS, is named by what it said', async (t) => {
  const net = await import('node:net')
  const ssh = net.createServer((sock) => sock.end('SSH-2.0-OpenSSH_9.2\r\n'))
  await new Promise<void>((r) => ssh.listen(0, '127.0.0.1', r))
  t.teardown(() => void ssh.close())
  const url = `nats://127.0.0.1:${(ssh.address() as { port: number }).port}`
  const f = await failure(url)
  t.match(f.message, `${url} answered but is not a NATS server (it said "SSH-2.0-OpenSSH_9.2")`)
})

t.test('malformed URLs are refused before any connection', async (t) => {
  for (const [url, why] of [
    ['', /it is empty/],
    ['foo bar', /"foo bar" is not a URL/],
    ['http://127.0.0.1:4222', /the scheme http:\/\/ is not nats:\/\/ or tls:\/\//],
    ['nats://127.0.0.1:4222/x', /has no path/],
  ] as const) {
    const f = await failure(url)
    t.match(f.message, /^malformed NATS URL /, url)
    t.match(f.message, why)
  }
})

t.test('credentials in the URL are used, and never printed', async (t) => {
  const port = await freePort()
  const server = spawn(natsServerBinary(), ['-a', '127.0.0.1', '-p', String(port), '--user', 'troupe', '--pass', 's3cret'], { stdio: 'ignore' })
  t.teardown(() => void server.kill('SIGKILL'))
  const good = `nats://troupe:s3cret@127.0.0.1:${port}`
  // nats-server takes a moment to listen: retry the refused connection until it accepts, bounded.
  const deadline = Date.now() + 10_000
  for (;;) {
    try {
      await (await connectNats(good)).close()
      break
    } catch (err) {
      if (!/nothing is listening/.test((err as Error).message) || Date.now() > deadline) throw err
      await new Promise((r) => setTimeout(r, 50))
    }
  }
  t.pass('connected with user and password from the URL')
  const f = await failure(`nats://troupe:wrong@127.0.0.1:${port}`)
  t.match(f.message, `nats://troupe:***@127.0.0.1:${port} refused our credentials`)
  t.notMatch(f.message, /wrong/, 'the password is not in the message')
})

t.test('a connection keeps the reconnect settings of a long-lived process', async (t) => {
  const nats = await startNats()
  t.teardown(() => nats.stop())
  const nc = await connectNats(nats.url, { name: 'probe' })
  t.teardown(() => nc.close())
  const opts = (nc as unknown as { options: Record<string, unknown> }).options
  t.equal(opts.maxReconnectAttempts, -1)
  t.equal(opts.reconnectTimeWait, 250)
  t.equal(opts.name, 'probe')
})

t.test('URL parsing and redaction', async (t) => {
  t.same(parseNatsUrl('nats://u:p%40ss@h:1, tls://h2'), [
    { url: 'nats://h:1', host: 'h', port: 1, user: 'u', pass: 'p@ss' },
    { url: 'tls://h2', host: 'h2', port: 4222 },
  ])
  t.same(parseNatsUrl('127.0.0.1:5000'), [{ url: 'nats://127.0.0.1:5000', host: '127.0.0.1', port: 5000 }])
  t.same(parseNatsUrl('nats://tok@[::1]:4222'), [{ url: 'nats://[::1]:4222', host: '::1', port: 4222, token: 'tok' }])
  t.equal(redact('nats://u:p@h:1,nats://tok@h2'), 'nats://u:***@h:1,nats://***@h2')
})
