// `npm run bench -- keys`: what checking API keys costs a request. Two `troupe start`s as `npm start` runs them, one
// with TROUPE_AUTH=off and one with keys on (its admin key from TROUPE_ADMIN_KEY_FILE, its limits raised far above the
// load, so the token bucket is taken on every request but never refuses), loaded at the same time in the same run: GET
// /v1/agents/{id} and POST /v1/agents, every request sending the same x-api-key to both. Ratios are keys on / off of
// each round's req/s, and the median of those (target ≥ 0.95).
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { startNats } from '../helpers/nats.js'
import { raw, startTroupe, type TroupeProcess } from '../helpers/troupe.js'
import { loadInBackground, ready, sleep, startAsNpmStart, stopServer, type LoadResult } from './bed.js'

const DURATION = Number(process.env.BENCH_MS ?? 5000)
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const KEY = 'bench-admin-key-0123456789abcdefghijklmnopqrstuvwxyz'
const createBody = JSON.stringify({ name: 'bench', model: 'claude-sonnet-4-5', system: 'You are a benchmark.' })
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!

export async function runKeysBench(): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'troupe-bench-keys-'))
  writeFileSync(path.join(dir, 'admin.key'), KEY, { mode: 0o600 })
  const off = await startAsNpmStart({ TROUPE_AUTH: 'off' })
  const on = await startAsNpmStart({ TROUPE_ADMIN_KEY_FILE: path.join(dir, 'admin.key') })
  try {
    await ready(off.troupe.url)
    await ready(on.troupe.url)
    const h = { 'x-api-key': KEY }
    const keys = await raw(on.troupe.url, 'GET', '/v1/admin/api_keys', undefined, h)
    const lifted = await raw(on.troupe.url, 'POST', `/v1/admin/api_keys/${keys.json.data[0].id}`, { limits: { requests_per_second: 1e9, burst: 1e9 } }, h)
    if (lifted.status !== 200) throw new Error(`could not raise the bench key's limits: ${lifted.text}`)
    const agentOf = async (url: string) => (await raw(url, 'POST', '/v1/agents', createBody, h)).json.id as string
    const [offAgent, onAgent] = [await agentOf(off.troupe.url), await agentOf(on.troupe.url)]
    // Both servers loaded at once, each by half the connections: whatever else the machine does then falls on both
    // alike (measured one after the other, a busy neighbour swung single runs by 2×), and the ratio is of what each
    // request costs its server.
    const half = Math.max(1, CONNECTIONS >> 1)
    const both = (offUrl: string, onUrl: string, method: string, body?: string) =>
      Promise.all([
        loadInBackground(offUrl, method, DURATION, half, { apiKey: KEY, ...(body ? { body } : {}) }),
        loadInBackground(onUrl, method, DURATION, half, { apiKey: KEY, ...(body ? { body } : {}) }),
      ])
    const calls: Array<[string, () => Promise<[LoadResult, LoadResult]>]> = [
      ['GET /v1/agents/{id}', () => both(`${off.troupe.url}/v1/agents/${offAgent}`, `${on.troupe.url}/v1/agents/${onAgent}`, 'GET')],
      ['POST /v1/agents', () => both(`${off.troupe.url}/v1/agents`, `${on.troupe.url}/v1/agents`, 'POST', createBody)],
    ]
    // Warm both (JIT, connections, caches), then measure.
    for (const [, call] of calls) await call()
    console.log(`\nAPI keys: keys on vs TROUPE_AUTH=off, loaded at once, ${half} connections each, ${DURATION} ms per run, ${ROUNDS} rounds`)
    for (const [name, call] of calls) {
      const offRuns: LoadResult[] = []
      const onRuns: LoadResult[] = []
      for (let i = 0; i < ROUNDS; i++) {
        const [a, b] = await call()
        offRuns.push(a)
        onRuns.push(b)
      }
      const ratio = median(onRuns.map((r, i) => r.rps / offRuns[i]!.rps))
      const errors = [...onRuns, ...offRuns].reduce((n, r) => n + r.errors, 0)
      console.log(
        `  ${name.padEnd(20)} on ${median(onRuns.map((r) => r.rps)).toFixed(0)} req/s (${onRuns.map((r) => r.rps.toFixed(0)).join(' / ')})  ` +
          `off ${median(offRuns.map((r) => r.rps)).toFixed(0)} req/s (${offRuns.map((r) => r.rps.toFixed(0)).join(' / ')})  ` +
          `on/off ${ratio.toFixed(3)}  target ≥ 0.95 ${ratio >= 0.95 ? 'ok' : 'MISSED'}${errors ? `  ${errors} errors` : ''}`,
      )
    }
  } finally {
    await stopServer(on.troupe)
    await stopServer(off.troupe)
  }
}

/**
 * `npm run bench -- keys.bound`: the rate limiter's error bound with 3 hosts. Three `troupe serve` on one NATS, a key
 * of `RATE`/s with a burst of `RATE`, loaded through all three at once (as a load balancer spreads it), then through one
 * only: what the cluster admitted against `rate × t + burst`, and what one host alone admits (its third).
 */
export async function runKeysBoundBench(): Promise<void> {
  const RATE = 100
  const nats = await startNats()
  const dir = mkdtempSync(path.join(tmpdir(), 'troupe-bench-bound-'))
  writeFileSync(path.join(dir, 'admin.key'), KEY, { mode: 0o600 })
  const hosts: TroupeProcess[] = []
  try {
    for (let i = 0; i < 3; i++)
      hosts.push(await startTroupe({ natsUrl: nats.url, stderrFile: '/dev/null', env: { LOG_LEVEL: '', TROUPE_ADMIN_KEY_FILE: path.join(dir, 'admin.key') } }))
    for (const h of hosts) await ready(h.url)
    // Every host has heard the others' heartbeats (N = 3) before the load.
    await sleep(3000)
    const made = await raw(
      hosts[0]!.url,
      'POST',
      '/v1/admin/api_keys',
      { name: 'bound', limits: { requests_per_second: RATE, burst: RATE } },
      { 'x-api-key': KEY },
    )
    const key = made.json.key as string
    const admitted = (r: LoadResult) => r.requests - r.errors
    const seconds = DURATION / 1000
    const bound = RATE * seconds + RATE
    const spread = await Promise.all(hosts.map((h) => loadInBackground(`${h.url}/v1/agents`, 'GET', DURATION, 4, { apiKey: key })))
    const all = spread.reduce((n, r) => n + admitted(r), 0)
    console.log(`\nrate limits, 3 hosts, a key of ${RATE}/s burst ${RATE}, ${seconds} s of load from 4 connections per host`)
    console.log(
      `  spread over the 3 hosts: ${all} admitted (${spread.map(admitted).join(' + ')}), bound rate·t + burst = ${bound}: ${all <= bound ? 'within' : 'OVER'} (${((all / bound) * 100).toFixed(1)}% of it)`,
    )
    // A fresh key, so the first run's debt does not count.
    const fresh = (
      await raw(hosts[0]!.url, 'POST', '/v1/admin/api_keys', { name: 'bound2', limits: { requests_per_second: RATE, burst: RATE } }, { 'x-api-key': KEY })
    ).json.key as string
    const one = admitted(await loadInBackground(`${hosts[0]!.url}/v1/agents`, 'GET', DURATION, 12, { apiKey: fresh }))
    console.log(`  all through one host: ${one} admitted, its share (rate·t + burst)/3 = ${(bound / 3).toFixed(0)}`)
  } finally {
    for (const h of hosts) await stopServer(h)
    await nats.stop()
  }
}
