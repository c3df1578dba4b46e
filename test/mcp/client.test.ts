import { createServer, type Socket } from 'node:net'
import t from 'tap'
import { bearerAuth, McpFailure, McpPool, NO_AUTH } from '../../actors/mcp/index.js'
import { startFakeMcpServer } from '../fakes/mcp-server.js'
import { until } from '../helpers/wait.js'

/** The session's MCP client (actors/mcp/) against the local MCP server, over both transports. */

for (const sse of [false, true]) {
  t.test(`${sse ? 'an SSE-only server (the client falls back to SSE)' : 'a streamable HTTP server'}: list, call, cancel, list_changed`, async (t) => {
    const server = await startFakeMcpServer({ sse })
    t.teardown(() => server.close())
    const pool = new McpPool()
    t.teardown(() => pool.close())
    const conn = pool.get({ name: 'fake', url: server.url })
    const tools = await conn.tools()
    t.same(
      tools.map((x) => x.name),
      ['echo', 'sleep', 'fail'],
    )
    t.equal(conn.transport, sse ? 'sse' : 'streamable_http')
    t.same(await conn.call('echo', { text: 'hi' }, new AbortController().signal), { content: [{ type: 'text', text: 'hi' }], is_error: false })
    t.same(await conn.call('fail', {}, new AbortController().signal), {
      content: [{ type: 'text', text: 'it failed, as it always does' }],
      is_error: true,
    })
    // Listed once per connection: the cache answers until the server says its list changed.
    await conn.tools()
    t.equal(server.listings, 1)
    t.equal(server.connections, 1, 'one connection, reused')
    server.addTool('later')
    await until('the list to be read again after list_changed', async () => (await conn.tools()).some((x) => x.name === 'later'), 10_000, 50)

    const ac = new AbortController()
    const started = Date.now()
    const call = conn.call('sleep', { ms: 30_000 }, ac.signal)
    await until('the sleep to start on the server', async () => server.calls.some((c) => c.tool === 'sleep'), 10_000, 20)
    ac.abort()
    await t.rejects(call)
    t.ok(Date.now() - started < 5_000, 'the call ends at once')
    const sleep = server.calls.find((c) => c.tool === 'sleep')!
    await until('the server to see the cancellation', async () => sleep.cancelledAt !== undefined, 5_000, 20)
    // The connection serves on after a cancelled call.
    t.same((await conn.call('echo', { text: 'again' }, new AbortController().signal)).content, [{ type: 'text', text: 'again' }])
  })
}

t.test('an unreachable server and one refusing the credential are told apart', async (t) => {
  const server = await startFakeMcpServer()
  const url = server.url
  await server.close()
  const pool = new McpPool()
  t.teardown(() => pool.close())
  const err = await pool
    .get({ name: 'gone', url })
    .tools()
    .catch((e) => e)
  t.ok(err instanceof McpFailure)
  t.equal(err.kind, 'unreachable')
  t.match(err.message, /gone/)

  for (const status of [401, 403]) {
    const refusing = await startFakeMcpServer()
    t.teardown(() => refusing.close())
    refusing.status = status
    const e = await pool
      .get({ name: `refusing-${status}`, url: refusing.url })
      .tools()
      .catch((x) => x)
    t.ok(e instanceof McpFailure)
    t.equal(e.kind, 'auth', `${status} is an authentication failure`)
    // The next use tries again, and succeeds once the server accepts.
    refusing.status = undefined
    t.ok((await pool.get({ name: `refusing-${status}`, url: refusing.url }).tools()).length)
  }
})

t.test('a closed pool opens nothing', async (t) => {
  const server = await startFakeMcpServer()
  t.teardown(() => server.close())
  const pool = new McpPool()
  await pool.get({ name: 'fake', url: server.url }).tools()
  await pool.close()
  await t.rejects(pool.get({ name: 'fake', url: server.url }).tools())
})

t.test('a server that accepts the connection and never answers counts as unreachable once the connect time is up', async (t) => {
  const sockets = new Set<Socket>()
  const silent = createServer((sock) => {
    sockets.add(sock)
    sock.on('error', () => undefined)
  })
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
  t.teardown(() => {
    for (const s of sockets) s.destroy()
    silent.close()
  })
  const port = (silent.address() as { port: number }).port
  const pool = new McpPool(NO_AUTH, { connectMs: 500, callMs: 1000 })
  t.teardown(() => pool.close())
  const started = Date.now()
  const err = await pool
    .get({ name: 'silent', url: `http://127.0.0.1:${port}/mcp` })
    .tools()
    .catch((e) => e)
  t.ok(err instanceof McpFailure)
  t.equal(err.kind, 'unreachable')
  t.ok(Date.now() - started < 5000, `given up after ${Date.now() - started} ms`)
})

t.test('a server that forgot the MCP session (404) gets a new one, and the call is made once', async (t) => {
  const server = await startFakeMcpServer()
  t.teardown(() => server.close())
  const pool = new McpPool()
  t.teardown(() => pool.close())
  const conn = pool.get({ name: 'fake', url: server.url })
  await conn.tools()
  server.forgetSessions()
  const before = server.calls.length
  t.same((await conn.call('echo', { text: 'after a restart' }, new AbortController().signal)).content, [{ type: 'text', text: 'after a restart' }])
  t.equal(server.calls.length, before + 1, 'run once')
  t.equal(server.connections, 2, 'on a new MCP session')
})

t.test('credentials: a 401 at connect renews the credential once; a 401 on the open connection renews it once and calls again', async (t) => {
  const server = await startFakeMcpServer()
  t.teardown(() => server.close())
  server.accept = new Set(['second'])
  // A bearer source as the vaults' is: a token and its basis; asked with the refused basis, the next token.
  const asked: Array<string | undefined> = []
  const tokens = ['first', 'second', 'third', 'fourth']
  let at = 0
  const source = async (_url: string, stale?: string) => {
    asked.push(stale)
    if (stale !== undefined && stale === String(at)) at++
    return { token: tokens[at]!, basis: String(at) }
  }
  const pool = new McpPool(bearerAuth(source))
  t.teardown(() => pool.close())
  const conn = pool.get({ name: 'guarded', url: server.url })
  t.same(
    (await conn.tools()).map((x) => x.name),
    ['echo', 'sleep', 'fail'],
  )
  t.same(asked, [undefined, '0'], 'refused at connect: renewed once')
  t.same(server.authorizations.slice(0, 2), ['Bearer first', 'Bearer second'])

  // Revoked while open: the call gets a 401, the credential is renewed once, the call made once on a new connection.
  server.accept = new Set(['third'])
  const connections = server.connections
  t.same((await conn.call('echo', { text: 'again' }, new AbortController().signal)).content, [{ type: 'text', text: 'again' }])
  t.same(asked, [undefined, '0', '1'])
  t.equal(server.connections, connections + 1)
  t.equal(server.calls.filter((c) => c.tool === 'echo').length, 1, 'the refused call never ran; the second did')

  // Refused again after the renewal: an auth failure, not a loop.
  server.accept = new Set()
  const before = asked.length
  const err = await conn.call('echo', { text: 'no' }, new AbortController().signal).catch((e) => e)
  t.ok(err instanceof McpFailure)
  t.equal(err.kind, 'auth')
  t.equal(asked.length - before, 1, 'one renewal')
})

t.test('credentials: a source that throws is an auth failure naming the server; a static token refused is asked once', async (t) => {
  const server = await startFakeMcpServer()
  t.teardown(() => server.close())
  server.accept = new Set(['right'])
  const failing = new McpPool(
    bearerAuth(async () => {
      throw new Error('the OAuth refresh of credential vcrd_X failed')
    }),
  )
  t.teardown(() => failing.close())
  const err = await failing
    .get({ name: 'failing', url: server.url })
    .tools()
    .catch((e) => e)
  t.match(err, { kind: 'auth', server: 'failing', message: /failing.*refresh of credential vcrd_X failed/ })
  t.equal(server.authorizations.length, 0, 'nothing sent')

  let asked = 0
  const wrong = new McpPool(
    bearerAuth(async () => {
      asked++
      return { token: 'wrong', basis: 'b' }
    }),
  )
  t.teardown(() => wrong.close())
  const refused = await wrong
    .get({ name: 'wrong', url: server.url })
    .tools()
    .catch((e) => e)
  t.match(refused, { kind: 'auth', status: 401 })
  t.equal(asked, 2, 'asked again after the 401, got the same token')
  t.same(server.authorizations, ['Bearer wrong'], 'and did not send it twice')
})
