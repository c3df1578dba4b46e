// `npm run fuzz -- [--seed N] [--requests N] [--concurrency N] [--http uws|node] [--only i,j] [--skip class,…]
//   [--verbose] [--timeout-ms N] [--settle-seconds N]`
// Starts a server of its own (its own nats-server, free ports), sends a seeded sequence of hostile requests and
// exits 1 on any failure, printing the seed and each offending request so it can be replayed with --only.
import { runFuzz } from './runner.js'
import { CLASSES, type HttpTransport } from './types.js'

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

try {
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
  console.log(`fuzz seed ${seed} (replay: npm run fuzz -- --seed ${seed} --requests ${requests}${http ? ` --http ${http}` : ''})`)
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
  process.exit(result.ok ? 0 : 1)
} catch (err) {
  console.error(err instanceof Error ? err.message : err)
  process.exit(2)
}
