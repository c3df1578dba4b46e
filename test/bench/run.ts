// `npm run bench`: GET /v1/agents/{id} and POST /v1/agents through the whole stack (a real `troupe serve`
// on a real nats-server), and the same load against raw uWebSockets.js + raw NATS request/reply in the
// same run, printed as figures and ratios. Targets: GET ≥ 60 %, POST ≥ 25 % of the baseline.
// Then the session benchmarks (sessions.ts). Arguments pick what runs: `agents`, `sessions`, or one session
// benchmark (`sessions.turn`, `sessions.streams`, `sessions.idle`); none runs everything.
import { spawn, execFileSync } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { startNats } from '../helpers/nats.js'
import { clientFor, startTroupe } from '../helpers/troupe.js'
import { runSessionBenches, SESSION_BENCHES, type SessionBench } from './sessions.js'

const here = path.dirname(fileURLToPath(import.meta.url))
const DURATION = Number(process.env.BENCH_MS ?? 5000)
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32)

interface Result { requests: number; rps: number; p50: number; p99: number; errors: number }

function load(url: string, method: string, body?: string): Result {
  const out = execFileSync(process.execPath, ['--import', 'tsx', path.join(here, 'loadgen.ts'), url, method, body ?? '-', String(DURATION), String(CONNECTIONS)], { encoding: 'utf8' })
  return JSON.parse(out.trim().split('\n').pop()!)
}

async function startBaseline(natsUrl: string): Promise<{ url: string; stop(): void }> {
  const proc = spawn(process.execPath, ['--import', 'tsx', path.join(here, 'baseline-server.ts'), natsUrl], { stdio: ['ignore', 'pipe', 'inherit'] })
  const port = await new Promise<string>((resolve) => {
    let buf = ''
    proc.stdout!.on('data', (d) => {
      buf += d
      const m = /listening on (\d+)/.exec(buf)
      if (m) resolve(m[1]!)
    })
  })
  return { url: `http://127.0.0.1:${port}`, stop: () => proc.kill('SIGKILL') }
}

async function agentBenches(): Promise<void> {
  const nats = await startNats()
  const troupe = await startTroupe({ natsUrl: nats.url, env: { LOG_LEVEL: 'warn' } })
  const baseline = await startBaseline(nats.url)
  try {
    const client = clientFor(troupe.url)
    const agent = await client.beta.agents.create({ name: 'bench', model: 'claude-sonnet-4-5' })
    const createBody = JSON.stringify({ name: 'bench', model: 'claude-sonnet-4-5', system: 'You are a benchmark.' })

    // Warm both (JIT, connections, KV buckets), then measure.
    load(`${troupe.url}/v1/agents/${agent.id}`, 'GET')
    load(`${baseline.url}/get`, 'GET')
    const rows = [
      ['GET /v1/agents/{id}', load(`${troupe.url}/v1/agents/${agent.id}`, 'GET'), load(`${baseline.url}/get`, 'GET'), 0.6],
      ['POST /v1/agents', load(`${troupe.url}/v1/agents`, 'POST', createBody), load(`${baseline.url}/put`, 'POST', createBody), 0.25],
    ] as const
    console.log(`\n${CONNECTIONS} connections, ${DURATION} ms per run, loopback, nats-server ${nats.url}`)
    console.log('route                  troupe rps   p99 ms | baseline rps   p99 ms | ratio  target')
    for (const [name, t, b, target] of rows) {
      const ratio = t.rps / b.rps
      console.log(
        `${name.padEnd(22)} ${t.rps.toFixed(0).padStart(10)} ${t.p99.toFixed(2).padStart(8)} | ${b.rps.toFixed(0).padStart(12)} ${b.p99.toFixed(2).padStart(8)} | ${(ratio * 100).toFixed(0).padStart(4)} %  ≥ ${target * 100} % ${ratio >= target ? 'ok' : 'MISSED'}` +
          (t.errors || b.errors ? `  (errors: troupe ${t.errors}, baseline ${b.errors})` : ''),
      )
    }
  } finally {
    baseline.stop()
    troupe.killNow()
    nats.stopNow()
  }
}

const args = process.argv.slice(2)
const known = ['agents', 'sessions', ...SESSION_BENCHES.map((b) => `sessions.${b}`)]
const unknown = args.filter((a) => !known.includes(a))
if (unknown.length) {
  console.error(`unknown benchmark ${unknown.join(', ')}; pick from ${known.join(', ')} (none: all)`)
  process.exit(2)
}
const sessionArgs = args.filter((a) => a.startsWith('sessions.')).map((a) => a.slice('sessions.'.length) as SessionBench)
if (!args.length || args.includes('agents')) await agentBenches()
if (!args.length || args.includes('sessions')) await runSessionBenches()
else if (sessionArgs.length) await runSessionBenches(sessionArgs)
