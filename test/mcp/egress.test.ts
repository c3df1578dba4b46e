import t from 'tap'
import { DEFAULT_MCP_TIMINGS, McpFailure, McpPool, NO_AUTH } from '../../actors/mcp/index.js'
import { egressFetch } from '../../actors/mcp/egress.js'
import { NO_EXCEPTIONS, parseAddressExceptions, type Resolver } from '../../actors/kit/index.js'
import { startFakeMcpServer } from '../fakes/mcp-server.js'

/**
 * Where a session's MCP connections may go (issue 43 point 4): only public addresses, whatever the URL names, unless the
 * operator excepts a name or an address (`TROUPE_MCP_ALLOW_HOSTS`); the connection goes to the address that was checked.
 */

const server = await startFakeMcpServer()
t.teardown(() => server.close())
const port = new URL(server.url).port

/** A resolver that answers from a table, counting what it was asked. */
function table(entries: Record<string, string[]>): Resolver & { asked: string[] } {
  const asked: string[] = []
  return Object.assign(
    async (host: string) => {
      asked.push(host)
      return entries[host] ?? []
    },
    { asked },
  )
}

async function list(url: string, except = NO_EXCEPTIONS, resolve?: Resolver) {
  const pool = new McpPool(NO_AUTH, { ...DEFAULT_MCP_TIMINGS, connectMs: 3000 }, egressFetch({ except, ...(resolve ? { resolve } : {}) }))
  try {
    return await pool
      .get({ name: 'srv', url })
      .tools()
      .then((tools) => tools.map((x) => x.name))
  } finally {
    await pool.close()
  }
}

t.test('loopback, private and metadata addresses are refused, as literals and behind names', async (t) => {
  const resolve = table({
    'mcp.example.test': ['127.0.0.1'],
    'rebind.example.test': ['93.184.216.34', '10.1.2.3'],
    'metadata.example.test': ['169.254.169.254'],
  })
  const cases: Array<[string, RegExp]> = [
    [server.url, /127\.0\.0\.1 .*loopback/],
    [`http://[::1]:${port}/mcp`, /::1 .*loopback/],
    [`http://mcp.example.test:${port}/mcp`, /mcp\.example\.test resolves to 127\.0\.0\.1 \(loopback\)/],
    // One private answer among public ones refuses the name: a rebinding answer may hand out several.
    [`http://rebind.example.test:${port}/mcp`, /10\.1\.2\.3 \(private\)/],
    [`http://metadata.example.test/mcp`, /169\.254\.169\.254 \(linkLocal\)/],
  ]
  for (const [url, why] of cases) {
    const err = await list(url, NO_EXCEPTIONS, resolve).catch((e) => e)
    t.ok(err instanceof McpFailure, url)
    t.equal(err.kind, 'unreachable', `${url}: a connection failure`)
    t.match(err.message, why, `${url}: says why`)
    t.match(err.message, /TROUPE_MCP_ALLOW_HOSTS/, `${url}: names the setting`)
  }
  t.equal(server.connections, 0, 'nothing reached the server')
})

t.test('the operator lets names and addresses through', async (t) => {
  const resolve = table({ 'mcp.example.test': ['127.0.0.1'], 'other.example.test': ['127.0.0.1'] })
  t.same(await list(server.url, parseAddressExceptions('127.0.0.1', 'X')), ['echo', 'sleep', 'fail'], 'an address')
  t.same(await list(server.url, parseAddressExceptions('127.0.0.0/8', 'X')), ['echo', 'sleep', 'fail'], 'a range')
  // A name: wherever it resolves; reached at exactly the address the checked lookup gave (the table's, not DNS's).
  const byName = parseAddressExceptions('MCP.example.test.', 'X')
  t.same(await list(`http://mcp.example.test:${port}/mcp`, byName, resolve), ['echo', 'sleep', 'fail'], 'a host name')
  t.ok(resolve.asked.includes('mcp.example.test'), 'resolved by the checked lookup')
  const other = await list(`http://other.example.test:${port}/mcp`, byName, resolve).catch((e) => e)
  t.match(other.message, /other\.example\.test resolves to 127\.0\.0\.1/, 'another name at the same address is not let through by the name')
  const wrongRange = await list(server.url, parseAddressExceptions('10.0.0.0/8,::1', 'X')).catch((e) => e)
  t.match(wrongRange.message, /loopback/, 'a range that does not hold the address')
})

t.test('TROUPE_MCP_ALLOW_HOSTS items are names, addresses or ranges', async (t) => {
  const e = parseAddressExceptions(' mcp.internal , 10.0.0.0/8,[::1], 127.0.0.1 ,,', 'TROUPE_MCP_ALLOW_HOSTS')
  t.same([...e.hosts], ['mcp.internal'])
  t.equal(e.ranges.length, 3)
  for (const bad of ['http://x', 'a b', '10.0.0.0/99', 'x/8', '-bad-.com', 'host:80']) {
    t.throws(() => parseAddressExceptions(bad, 'TROUPE_MCP_ALLOW_HOSTS'), /TROUPE_MCP_ALLOW_HOSTS: .* is not a host name, an address or a CIDR range/, bad)
  }
})

t.test('a response past the byte limit fails the request as the server unreachable', async (t) => {
  const except = parseAddressExceptions('127.0.0.1', 'X')
  const pool = new McpPool(NO_AUTH, { connectMs: 60_000, callMs: 60_000, maxResponseBytes: 4096 }, egressFetch({ except }))
  t.teardown(() => pool.close())
  const conn = pool.get({ name: 'srv', url: server.url })
  t.same(
    (await conn.tools()).map((x) => x.name),
    ['echo', 'sleep', 'fail'],
    'small answers pass',
  )
  const err = await conn.call('echo', { text: 'x'.repeat(10_000) }, new AbortController().signal).catch((e) => e)
  t.ok(err instanceof McpFailure, `a failure: ${err?.message}`)
  t.equal(err.kind, 'unreachable')
  t.match(err.message, /over 4096 bytes/)
})
