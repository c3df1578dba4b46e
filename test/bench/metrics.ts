// `npm run bench -- metrics`: what Prometheus metrics cost. Two servers run side by side, each as `npm start` runs it,
// one with metrics on (the default: every request, turn and tool counted, prom-client's process metrics collected) and
// one with TROUPE_METRICS=off (nothing recorded), measured in alternating rounds so both see the same machine:
//   GET   GET /v1/agents/{id} under closed-loop load; on the metrics-on server /metrics is scraped every second meanwhile
//         (a scrape every second is 15 times Prometheus's default rate). Ratios: req/s on ÷ req/s off (median of the
//         rounds' ratios), and server CPU per request off ÷ on (over all rounds: /proc counts CPU in 10 ms ticks).
//   turn  sequential turns against the instant fake model (POST user.message to session.status_idle on an open SSE
//         stream); ratios: p50 off ÷ p50 on (a time: higher is better; median of the rounds'), and server CPU per turn
//         off ÷ on (over all rounds).
// Target: every ratio ≥ 0.97. The load generator and both servers share the machine: read the rounds' spread too.
// Each part runs twice, once with either server started first, and the verdict is the geometric mean of the two.
// BENCH_METRICS_ON=off runs the "on" server with metrics off as well: an A/A run, which shows the noise of the ratios.
// BENCH_METRICS_PARTS=get or turn runs one part.
import { performance } from 'node:perf_hooks'
import { readFileSync } from 'node:fs'
import { agentAndEnvironment, bed, type Bed, loadInBackground, ms, request, sleep, summary, userMessage, Waiter } from './bed.js'
import { openSse, type SseMessage, streamAgent } from './sse-client.js'

const DURATION = Number(process.env.BENCH_MS ?? 5000)
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5)
/** Turns per server and round. */
const TURNS = Number(process.env.BENCH_TURNS ?? 100)
const TARGET = 0.97
const ON = process.env.BENCH_METRICS_ON ?? 'on'
const PARTS = (process.env.BENCH_METRICS_PARTS ?? 'get,turn').split(',')

/** The runs' answers other than 200, when there were any. */
const errorsOf = (gets: Array<{ on: GetRun; off: GetRun }>) => {
  const [on, off] = (['on', 'off'] as const).map((side) => gets.reduce((n, g) => n + g[side].errors, 0))
  return on || off ? `  NOT 200: ${on} vs ${off}` : ''
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!
const verdict = (r: number) => `target ≥ ${TARGET} ${r >= TARGET ? 'ok' : 'MISSED'}`

/** CPU time a process has used so far (user + system), in ms, from /proc (Linux; clock ticks of 10 ms). */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8')
    .replace(/^.*\) /s, '')
    .split(' ')
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100
}

interface GetRun {
  rps: number
  requests: number
  errors: number
  cpuMs: number
}

/** GET load on `b` for one run; with `scrape`, /metrics is fetched every second meanwhile. */
async function getRun(b: Bed, path: string, scrape: boolean): Promise<GetRun> {
  const url = b.troupe.url
  const cpu0 = cpuMs(b.troupe.proc.pid!)
  const run = loadInBackground(`${url}${path}`, 'GET', DURATION, CONNECTIONS)
  let scraping = scrape
  const scrapes = (async () => {
    while (scraping) {
      await fetch(`${url}/metrics`).then((r) => r.text())
      await sleep(1000)
    }
  })()
  const result = await run
  scraping = false
  await scrapes
  // Answers other than 200 (a 503 while a loaded machine lets the host's heartbeat lapse) are counted and shown.
  return { rps: result.rps, requests: result.requests, errors: result.errors, cpuMs: cpuMs(b.troupe.proc.pid!) - cpu0 }
}

/** `n` sequential turns on fresh sessions (20 turns each): each turn's time, and the server's CPU per turn. */
async function turns(b: Bed, ids: { agentId: string; envId: string }, n: number): Promise<{ times: number[]; cpuPerTurn: number }> {
  const sse = streamAgent()
  const waiter = new Waiter()
  const times: number[] = []
  let idles = 0
  let idleAt = 0
  let close = () => {}
  let sid = ''
  const cpu0 = cpuMs(b.troupe.proc.pid!)
  try {
    for (let i = 0; i < n; i++) {
      if (i % 20 === 0) {
        close()
        const session = await request(b.agent, b.troupe.url, 'POST', '/v1/sessions', { agent: ids.agentId, environment_id: ids.envId })
        sid = session.id
        idles = 0
        const stream = openSse(`${b.troupe.url}/v1/sessions/${sid}/events/stream`, sse, (m: SseMessage) => {
          if (m.event !== 'session.status_idle') return
          idles++
          idleAt = m.at
          waiter.poke()
        })
        close = () => stream.close()
        await stream.opened
      }
      const before = idles
      const t0 = performance.now()
      await request(b.agent, b.troupe.url, 'POST', `/v1/sessions/${sid}/events`, userMessage(`turn ${i}`))
      await waiter.until(() => idles > before, `session.status_idle of turn ${i}`)
      times.push(idleAt - t0)
    }
  } finally {
    close()
    sse.destroy()
  }
  return { times, cpuPerTurn: (cpuMs(b.troupe.proc.pid!) - cpu0) / n }
}

/** The ratios of one pass (`on-first`: the metrics-on server started first), each ≥ 1 where metrics cost nothing. */
type Ratios = Partial<Record<'get' | 'getCpu' | 'turn' | 'turnCpu', number>>

async function measureOrder(offFirst: boolean): Promise<Ratios> {
  const ratios: Ratios = {}
  const first = await bed({ TROUPE_METRICS: offFirst ? 'off' : ON })
  const second = await bed({ TROUPE_METRICS: offFirst ? ON : 'off' })
  const [on, off] = offFirst ? [second, first] : [first, second]
  try {
    const ids = { on: await agentAndEnvironment(on), off: await agentAndEnvironment(off) }
    const path = (b: typeof ids.on) => `/v1/agents/${b.agentId}`
    const get = { on: () => getRun(on, path(ids.on), true), off: () => getRun(off, path(ids.off), false) }
    const turn = { on: () => turns(on, ids.on, TURNS), off: () => turns(off, ids.off, TURNS) }
    const doGet = PARTS.includes('get')
    const doTurn = PARTS.includes('turn')
    // Warm both (JIT, connections, caches).
    if (doGet) await get.on().then(() => get.off())
    if (doTurn) await turns(on, ids.on, 20).then(() => turns(off, ids.off, 20))

    type TurnRun = Awaited<ReturnType<typeof turns>>
    const gets: Array<{ on: GetRun; off: GetRun }> = []
    const turnRounds: Array<{ on: TurnRun; off: TurnRun }> = []
    for (let r = 0; r < ROUNDS; r++) {
      // Which goes first alternates, so neither always runs on a machine the other just warmed or loaded.
      const [a, b] = r % 2 === 0 ? (['on', 'off'] as const) : (['off', 'on'] as const)
      if (doGet) gets.push({ [a]: await get[a](), [b]: await get[b]() } as { on: GetRun; off: GetRun })
      if (doTurn) turnRounds.push({ [a]: await turn[a](), [b]: await turn[b]() } as { on: TurnRun; off: TurnRun })
    }

    const sum = (xs: number[]) => xs.reduce((n, x) => n + x, 0)
    const p50 = (xs: number[]) => summary(xs).p50
    const µs = (x: number) => `${(x * 1000).toFixed(0)} µs`
    console.log(`\nmetrics: TROUPE_METRICS=${ON} vs off, ${ROUNDS} alternating rounds, the ${offFirst ? 'off' : ON} server started first`)
    if (doGet) {
      const getRatio = median(gets.map((g) => g.on.rps / g.off.rps))
      const cpu = (side: 'on' | 'off') => sum(gets.map((g) => g[side].cpuMs)) / sum(gets.map((g) => g[side].requests))
      console.log(
        `  GET /v1/agents/{id}, ${CONNECTIONS} connections, ${DURATION} ms, /metrics scraped every 1 s on the metrics-on one: ` +
          `${median(gets.map((g) => g.on.rps)).toFixed(0)} req/s vs ${median(gets.map((g) => g.off.rps)).toFixed(0)} req/s; ` +
          `ratio ${getRatio.toFixed(3)}  (rounds ${gets.map((g) => (g.on.rps / g.off.rps).toFixed(3)).join(' / ')})` +
          errorsOf(gets),
      )
      console.log(`  server CPU per GET: ${µs(cpu('on'))} vs ${µs(cpu('off'))}; ratio ${(cpu('off') / cpu('on')).toFixed(3)}`)
      ratios.get = getRatio
      ratios.getCpu = cpu('off') / cpu('on')
    }
    if (doTurn) {
      const turnRatio = median(turnRounds.map((t) => p50(t.off.times) / p50(t.on.times)))
      const cpu = (side: 'on' | 'off') => sum(turnRounds.map((t) => t[side].cpuPerTurn)) / turnRounds.length
      const all = (side: 'on' | 'off') => turnRounds.flatMap((t) => t[side].times)
      console.log(
        `  turn (POST user.message to session.status_idle), ${all('on').length} turns each: p50 ${ms(p50(all('on')))} vs ${ms(p50(all('off')))}; ` +
          `ratio ${turnRatio.toFixed(3)}  (rounds ${turnRounds.map((t) => (p50(t.off.times) / p50(t.on.times)).toFixed(3)).join(' / ')})`,
      )
      console.log(`  server CPU per turn: ${ms(cpu('on'))} vs ${ms(cpu('off'))}; ratio ${(cpu('off') / cpu('on')).toFixed(3)}`)
      ratios.turn = turnRatio
      ratios.turnCpu = cpu('off') / cpu('on')
    }
  } finally {
    on.stop()
    off.stop()
  }
  return ratios
}

/**
 * Both start orders, one after the other: an A/A run (BENCH_METRICS_ON=off) shows the server started first costing a few
 * percent more CPU per turn, whichever it is; the geometric mean of the two passes' ratios cancels that.
 */
export async function runMetricsBench(): Promise<void> {
  const a = await measureOrder(false)
  const b = await measureOrder(true)
  console.log('\nmetrics: both start orders (geometric mean of the two passes)')
  const names = { get: 'GET req/s', getCpu: 'server CPU per GET', turn: 'turn p50', turnCpu: 'server CPU per turn' } as const
  for (const k of Object.keys(names) as Array<keyof typeof names>) {
    const [x, y] = [a[k], b[k]]
    if (x === undefined || y === undefined) continue
    const r = Math.sqrt(x * y)
    console.log(`  ${names[k].padEnd(20)} ratio ${r.toFixed(3)}  ${verdict(r)}  (${x.toFixed(3)} on first, ${y.toFixed(3)} off first)`)
  }
}
