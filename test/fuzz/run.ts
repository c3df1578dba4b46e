// `npm run fuzz -- [--seed N] [--requests N] [--concurrency N] [--http uws|node] [--only i,j] [--skip class,…]
//   [--routes /v1/x,/v1/y] [--verbose] [--timeout-ms N] [--settle-seconds N] [--no-api-keys] [--no-mcp-servers]` (`--help` prints this)
// Starts a server of its own (its own nats-server, free ports), sends a seeded sequence of hostile requests and
// exits 1 on any failure, printing the seed and each offending request so it can be replayed with --only. Then
// (unless --only or --no-mcp-servers) sessions against hostile MCP servers, on a server of their own (mcp-servers.ts).
import { CLASSES, type HttpTransport } from './types.js'

const USAGE = `npm run fuzz -- [options]
  --seed N            the run's seed (default: a fresh one, printed first)
  --requests N        requests in the run (default 2000)
  --concurrency N     requests in flight (default 8)
  --http uws|node     the server's HTTP transport (default uws)
  --only i,j          only these requests of the run (replays a finding)
  --skip class,...    leave classes out (${CLASSES.join(', ')})
  --routes p,q        only the routes whose path starts with one of these (/v1/memory_stores); sessions-token
                      headers still go to the routes a token concerns
  --verbose           every request and answer
  --timeout-ms N      a request answered later fails (default 20000)
  --settle-seconds N  how long the server may take to settle after the run (default 30)
  --no-api-keys       leave out the API key run that follows the requests (a server with keys on: forged, truncated,
                      revoked, expired and rotated-away keys 401, read-only writes and non-admin keys on admin routes 403)
  --no-mcp-servers    leave out the sessions against hostile MCP servers that follow the requests`

function flag(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`)
  if (i < 0) return undefined
  const v = process.argv[i + 1]
  if (v === undefined || v.startsWith('--')) throw new Error(`--${name} needs a value`)
  return v
}

function intFlag(name: string, dflt: number): number {
  const raw = flag(name)
  const v = raw === undefined ? dflt : Number(raw)
  if (!Number.isInteger(v) || v < 0) throw new Error(`--${name} must be a whole number, not ${raw}`)
  return v
}

if (process.argv.includes('--help')) {
  console.log(USAGE)
  process.exit(0)
}

try {
  const routes = flag('routes')
  if (routes !== undefined) process.env.FUZZ_ROUTES = routes
  // Imported once FUZZ_ROUTES is set: the targets are chosen when the module loads.
  const { runFuzz } = await import('./runner.js')
  // Without --seed, a fresh one: printed first, so a failing run can always be replayed.
  const seed = intFlag('seed', Math.floor(Math.random() * 2 ** 31))
  const requests = intFlag('requests', 2000)
  const concurrency = Math.max(1, intFlag('concurrency', 8))
  const http = flag('http')
  if (http !== undefined && http !== 'uws' && http !== 'node') throw new Error(`--http must be uws or node, not ${http}`)
  const only = flag('only')
    ?.split(',')
    .map((s) => {
      const n = Number(s)
      if (!Number.isInteger(n) || n < 0) throw new Error(`--only takes request indices, not ${s}`)
      return n
    })
  const skip = flag('skip')?.split(',')
  for (const c of skip ?? []) if (!(CLASSES as readonly string[]).includes(c)) throw new Error(`--skip: no class ${c} (classes: ${CLASSES.join(', ')})`)
  console.log(
    `fuzz seed ${seed} (replay: npm run fuzz -- --seed ${seed} --requests ${requests}${http ? ` --http ${http}` : ''}${routes ? ` --routes ${routes}` : ''})`,
  )
  const result = await runFuzz({
    seed,
    requests,
    concurrency,
    http: http as HttpTransport | undefined,
    only,
    verbose: process.argv.includes('--verbose'),
    timeoutMs: intFlag('timeout-ms', 20_000),
    settleSeconds: intFlag('settle-seconds', 30),
    skip,
  })
  console.log(result.text)
  let ok = result.ok
  if (!only && !process.argv.includes('--no-api-keys')) {
    const { runApiKeyFuzz } = await import('./api-keys.js')
    const keys = await runApiKeyFuzz({ seed, requests: Math.min(requests, 1000), concurrency })
    for (const f of keys.failures.slice(0, 40)) console.log(`  ${f}`)
    ok = keys.ok && ok
  }
  if (!only && !process.argv.includes('--no-mcp-servers')) {
    const { runMcpServerFuzz } = await import('./mcp-servers.js')
    ok = (await runMcpServerFuzz()).ok && ok
  }
  process.exit(ok ? 0 : 1)
} catch (err) {
  console.error(err instanceof Error ? err.message : err)
  process.exit(2)
}
