// `sessions.calls`: POST /v1/sessions and GET /v1/sessions/{id} under load (default 50 connections, as in issue 7),
// beside their nearest peers, POST and GET /v1/agents, and the raw baseline (uWebSockets.js + one NATS
// request/reply, plus a KV put for POST) in the same run. The machine is shared, so each figure is the median of
// BENCH_ROUNDS rounds, the calls compared taking turns within a round, and ratios are medians of the per-round
// ratios. Targets: create ≥ 0.2× of the raw GET hop; session GET, in memory or not, within 10 % of agent GET. Also prints the NATS round trips of
// one call of each (hops.ts).
import { load, startBaseline, agentAndEnvironment, bed, request, sleep, type LoadResult } from './bed.js'
import { countHops, hopLine } from './hops.js'

const DURATION = Number(process.env.BENCH_MS ?? 3000)
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
/** Idle actors leave memory after this here (30 s by default), so one session can be read after it left. */
const IDLE_MS = 10_000

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!
const pct = (x: number) => `${(x * 100).toFixed(0)} %`

interface Row {
  name: string
  runs: LoadResult[]
}

const line = (r: Row, extra = '') => {
  const rps = median(r.runs.map((x) => x.rps))
  const p50 = median(r.runs.map((x) => x.p50))
  const errors = r.runs.reduce((n, x) => n + x.errors, 0)
  return (
    `  ${r.name.padEnd(26)} ${rps.toFixed(0).padStart(6)} req/s  p50 ${p50.toFixed(2).padStart(6)} ms` +
    `  (${r.runs.map((x) => x.rps.toFixed(0)).join(' / ')})${errors ? `  ${errors} errors` : ''}${extra}`
  )
}

/** Median over rounds of a/b, each round's a and b measured back to back. */
const ratio = (a: Row, b: Row) => median(a.runs.map((x, i) => x.rps / b.runs[i]!.rps))

export async function sessionCalls(): Promise<string[]> {
  const b = await bed({ TROUPE_SESSION_IDLE_MS: String(IDLE_MS) })
  const baseline = await startBaseline(b.nats.url)
  let keepAlive: NodeJS.Timeout | undefined
  try {
    const { agentId, envId } = await agentAndEnvironment(b)
    const createBody = JSON.stringify({ agent: agentId, environment_id: envId })
    const create = () => request(b.agent, b.troupe.url, 'POST', '/v1/sessions', JSON.parse(createBody))
    const session = await create()
    const idle = (await create()).id
    const idleSince = Date.now()
    const run = (url: string, method: string, body?: string) => load(url, method, body, DURATION, CONNECTIONS)
    // A session being read stays in memory; this one is read between its runs too (a GET every 2 s).
    keepAlive = setInterval(() => void request(b.agent, b.troupe.url, 'GET', `/v1/sessions/${session.id}`).catch(() => undefined), 2000)

    // One call of each alone, after a first one warmed caches and connections.
    await request(b.agent, b.troupe.url, 'GET', `/v1/sessions/${session.id}`)
    await request(b.agent, b.troupe.url, 'GET', `/v1/agents/${agentId}`)
    const createHops = await countHops(b.nats.url, create)
    const getHops = await countHops(b.nats.url, () => request(b.agent, b.troupe.url, 'GET', `/v1/sessions/${session.id}`))
    const agentHops = await countHops(b.nats.url, () => request(b.agent, b.troupe.url, 'GET', `/v1/agents/${agentId}`))

    // Warm (JIT, connections), and let the idle session leave memory: the sweep runs every idle/2.
    run(`${b.troupe.url}/v1/agents/${agentId}`, 'GET')
    run(`${b.troupe.url}/v1/sessions/${session.id}`, 'GET')
    run(`${baseline.url}/get`, 'GET')
    await sleep(Math.max(0, idleSince + 2 * IDLE_MS - Date.now()))

    const rows = {
      sessionGet: { name: 'GET /v1/sessions/{id}', runs: [] } as Row,
      idleGet: { name: 'GET idle session', runs: [] } as Row,
      agentGet: { name: 'GET /v1/agents/{id}', runs: [] } as Row,
      rawGet: { name: 'raw GET (NATS req/reply)', runs: [] } as Row,
      create: { name: 'POST /v1/sessions', runs: [] } as Row,
      agentCreate: { name: 'POST /v1/agents', runs: [] } as Row,
      rawPut: { name: 'raw POST (req + KV put)', runs: [] } as Row,
    }
    // The reads first, each round taking turns, then the creates: a create run leaves thousands of fresh sessions in
    // memory until they passivate, and whatever ran right after it measured that clean-up as much as itself.
    for (let i = 0; i < ROUNDS; i++) {
      rows.sessionGet.runs.push(run(`${b.troupe.url}/v1/sessions/${session.id}`, 'GET'))
      rows.agentGet.runs.push(run(`${b.troupe.url}/v1/agents/${agentId}`, 'GET'))
      rows.idleGet.runs.push(run(`${b.troupe.url}/v1/sessions/${idle}`, 'GET'))
      rows.rawGet.runs.push(run(`${baseline.url}/get`, 'GET'))
    }
    for (let i = 0; i < ROUNDS; i++) {
      rows.create.runs.push(run(`${b.troupe.url}/v1/sessions`, 'POST', createBody))
      rows.agentCreate.runs.push(run(`${b.troupe.url}/v1/agents`, 'POST', JSON.stringify({ name: 'bench', model: 'claude-sonnet-4-6' })))
      rows.rawPut.runs.push(run(`${baseline.url}/put`, 'POST', createBody))
    }

    const getRatio = ratio(rows.sessionGet, rows.agentGet)
    const idleRatio = ratio(rows.idleGet, rows.agentGet)
    const createHop = ratio(rows.create, rows.rawGet)
    return [
      `sessions.calls: ${CONNECTIONS} connections, ${DURATION} ms per run, median of ${ROUNDS} rounds (each round's runs in brackets)`,
      line(rows.agentGet, `  ${pct(ratio(rows.agentGet, rows.rawGet))} of raw`),
      line(rows.sessionGet, `  ${pct(getRatio)} of agent GET — target ≥ 90 % ${getRatio >= 0.9 ? 'ok' : 'MISSED'}`),
      line(rows.idleGet, `  ${pct(idleRatio)} of agent GET (not in memory) — target ≥ 90 % ${idleRatio >= 0.9 ? 'ok' : 'MISSED'}`),
      line(rows.rawGet),
      line(
        rows.create,
        `  ${pct(ratio(rows.create, rows.agentCreate))} of agent POST, ${createHop.toFixed(2)}× of the raw hop — target ≥ 0.2× ${createHop >= 0.2 ? 'ok' : 'MISSED'}`,
      ),
      line(rows.agentCreate),
      line(rows.rawPut),
      `  one create: ${hopLine(createHops)}`,
      `  one session GET: ${hopLine(getHops)}; one agent GET: ${hopLine(agentHops)}`,
      ...(process.env.BENCH_HOPS_VERBOSE ? [`  create subjects: ${createHops.subjects.join(' ')}`] : []),
    ]
  } finally {
    clearInterval(keepAlive)
    baseline.stop()
    b.stop()
  }
}
