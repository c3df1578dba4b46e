// Session benchmarks, run by `npm run bench` (or only these: `npm run bench -- sessions`, or one of them:
// `sessions.turn`, `sessions.streams`, `sessions.idle`, `sessions.calls`, `sessions.events`). Each figure comes with a baseline measured in the same
// run on the same machine:
//   turn     time from POST of a user.message to its agent.message on an open SSE stream, instant fake model;
//            baselines: the fake model's own streaming round trip and a raw NATS request/reply.
//   streams  1,000 SSE streams on one gateway (100 sessions × 10, then 1,000 on one session): time from sending a
//            user.message to its echo arriving on each stream; baseline: the same fan-out over raw NATS core
//            subscriptions, one per stream.
//   idle     RSS of one `troupe serve` holding 10,000 passivated sessions; baseline: the freshly started process.
//   calls    POST /v1/sessions and GET /v1/sessions/{id} under load, beside GET /v1/agents/{id} and a raw baseline
//            (session-calls.ts).
//   events   a page of GET …/events from a session of 100,000 events; baseline: raw JetStream direct gets
//            (session-events.ts).
import { readFileSync } from 'node:fs'
import os from 'node:os'
import { performance } from 'node:perf_hooks'
import Anthropic from '@anthropic-ai/sdk'
import { jetstream, jetstreamManager } from '@nats-io/jetstream'
import { connect } from '@nats-io/transport-node'
import { agentAndEnvironment, bed, CREATE_CONCURRENCY, ms, pool, request, sleep, summary, userMessage, Waiter, type Bed } from './bed.js'
import { countHops, hopLine } from './hops.js'
import { sessionCalls } from './session-calls.js'
import { sessionEvents } from './session-events.js'
import { openSse, streamAgent, type SseConnection, type SseMessage } from './sse-client.js'

const TURNS = Number(process.env.BENCH_TURNS ?? 200)
const WARMUP_TURNS = Number(process.env.BENCH_WARMUP_TURNS ?? 20)
const TURNS_PER_SESSION = 20
const STREAM_SESSIONS = Number(process.env.BENCH_STREAM_SESSIONS ?? 100)
const STREAMS_PER_SESSION = Number(process.env.BENCH_STREAMS_PER_SESSION ?? 10)
const STREAM_ROUNDS = Number(process.env.BENCH_STREAM_ROUNDS ?? 5)
const ONE_SESSION_ROUNDS = Number(process.env.BENCH_ONE_SESSION_ROUNDS ?? 20)
const IDLE_SESSIONS = Number(process.env.BENCH_IDLE_SESSIONS ?? 10_000)
const IDLE_MS = 1000

export const SESSION_BENCHES = ['turn', 'streams', 'idle', 'calls', 'events'] as const
export type SessionBench = (typeof SESSION_BENCHES)[number]

const mb = (kb: number) => `${(kb / 1024).toFixed(0)} MB`

/** CPU time a process has used so far (user + system), in ms, from /proc (Linux; clock ticks of 10 ms). */
function cpuMs(pid: number): number {
  // The command name (field 2) may hold spaces: fields are counted after its closing parenthesis.
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8')
    .replace(/^.*\) /s, '')
    .split(' ')
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100
}

/** VmRSS of a process in kB, from /proc (Linux). */
function rssKb(pid: number): number {
  const m = /VmRSS:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  if (!m) throw new Error(`no VmRSS for ${pid}`)
  return Number(m[1])
}

// -------------------------------------------------------------------------------------- (a) turn overhead

async function turnOverhead(): Promise<string> {
  const b = await bed()
  const sse = streamAgent()
  let stream: SseConnection | undefined
  try {
    const { agentId, envId } = await agentAndEnvironment(b)
    const waiter = new Waiter()
    let messages = 0
    let idles = 0
    let lastMessageAt = 0
    let lastIdleAt = 0
    let sid = ''
    const turns: number[] = []
    /** POST of the user.message to its session.status_idle on the stream: the whole turn as a client sees it. */
    const wholeTurns: number[] = []
    let cpuAtStart = 0
    // Every model request carries the whole conversation, so one session of 220 turns would measure the growing
    // history as much as Troupe: a new session (and stream) every TURNS_PER_SESSION turns, conversations of a
    // realistic length.
    for (let i = 0; i < WARMUP_TURNS + TURNS; i++) {
      if (i % TURNS_PER_SESSION === 0) {
        stream?.close()
        const session = await request(b.agent, b.troupe.url, 'POST', '/v1/sessions', { agent: agentId, environment_id: envId })
        messages = idles = 0
        stream = openSse(`${b.troupe.url}/v1/sessions/${session.id}/events/stream`, sse, (m: SseMessage) => {
          if (m.event === 'agent.message') {
            messages++
            lastMessageAt = m.at
          } else if (m.event === 'session.status_idle') {
            idles++
            lastIdleAt = m.at
          } else return
          waiter.poke()
        })
        await stream.opened
        sid = session.id
      }
      const n = i % TURNS_PER_SESSION
      if (i === WARMUP_TURNS) cpuAtStart = cpuMs(b.troupe.proc.pid!)
      const t0 = performance.now()
      await request(b.agent, b.troupe.url, 'POST', `/v1/sessions/${sid}/events`, userMessage(`turn ${i}`))
      await waiter.until(() => messages > n, `agent.message of turn ${i}`)
      if (i >= WARMUP_TURNS) turns.push(lastMessageAt - t0)
      // Sequential turns: the next message goes to an idle session.
      await waiter.until(() => idles > n, `session.status_idle of turn ${i}`)
      if (i >= WARMUP_TURNS) wholeTurns.push(lastIdleAt - t0)
    }
    // Sessions are created between turns (one per TURNS_PER_SESSION): their cost is in here too, a small share.
    const cpuPerTurn = (cpuMs(b.troupe.proc.pid!) - cpuAtStart) / TURNS
    // What one more turn sends to NATS, with nothing else in flight.
    const idlesBefore = idles
    const turnHops = await countHops(b.nats.url, async () => {
      await request(b.agent, b.troupe.url, 'POST', `/v1/sessions/${sid}/events`, userMessage('counted turn'))
      await waiter.until(() => idles > idlesBefore, 'session.status_idle of the counted turn')
    })

    // Baselines: the model's own round trip, as the session actor makes it (official client, streaming, to the end).
    const client = new Anthropic({ baseURL: b.model.url, apiKey: 'fake-key', maxRetries: 0 })
    const modelRtt: number[] = []
    for (let i = 0; i < WARMUP_TURNS + TURNS; i++) {
      const t0 = performance.now()
      const s = await client.messages.create({ model: 'claude-sonnet-4-6', max_tokens: 1024, stream: true, messages: [{ role: 'user', content: `turn ${i}` }] })
      for await (const _ of s) void _
      if (i >= WARMUP_TURNS) modelRtt.push(performance.now() - t0)
    }
    // A raw NATS request/reply (responder and requester in this process, as gateway and actor share one in `serve`),
    // and a raw JetStream publish (a turn stores several events, one after the other, before its agent.message).
    const nc = await connect({ servers: b.nats.url })
    const natsReq: number[] = []
    const jsPub: number[] = []
    try {
      nc.subscribe('bench.echo', { callback: (_e, m) => void m.respond(m.data) })
      const body = new TextEncoder().encode(JSON.stringify(userMessage('x')))
      for (let i = 0; i < WARMUP_TURNS + TURNS; i++) {
        const t0 = performance.now()
        await nc.request('bench.echo', body, { timeout: 5000 })
        if (i >= WARMUP_TURNS) natsReq.push(performance.now() - t0)
      }
      await jetstreamManager(nc).then((jsm) => jsm.streams.add({ name: 'BENCH_PUB', subjects: ['bench.pub.>'] }))
      const js = jetstream(nc)
      for (let i = 0; i < WARMUP_TURNS + TURNS; i++) {
        const t0 = performance.now()
        await js.publish('bench.pub.x', body)
        if (i >= WARMUP_TURNS) jsPub.push(performance.now() - t0)
      }
    } finally {
      await nc.close()
    }

    const t = summary(turns)
    const w = summary(wholeTurns)
    const m = summary(modelRtt)
    const r = summary(natsReq)
    const j = summary(jsPub)
    return (
      `sessions: turn overhead p50 ${ms(t.p50)} p99 ${ms(t.p99)} over ${t.n} turns ` +
      `(model round trip p50 ${ms(m.p50)}; raw NATS req p50 ${ms(r.p50)}; raw JetStream publish p50 ${ms(j.p50)}) — ` +
      `Troupe overhead p50 ${ms(t.p50 - m.p50)}, ${(t.p50 / m.p50).toFixed(1)}× the model round trip — target p50 < 5 ms ${t.p50 < 5 ? 'ok' : 'MISSED'}\n` +
      `sessions: whole turn (POST user.message to session.status_idle on the stream) p50 ${ms(w.p50)} p99 ${ms(w.p99)} — target p50 ≤ 4 ms ${w.p50 <= 4 ? 'ok' : 'MISSED'}\n` +
      `  server CPU per turn (troupe start, its nats-server not counted): ${ms(cpuPerTurn)}\n` +
      `  one turn: ${hopLine(turnHops)}${process.env.BENCH_HOPS_VERBOSE ? `\n  turn subjects: ${turnHops.subjects.join(' ')}` : ''}`
    )
  } finally {
    stream?.close()
    sse.destroy()
    b.stop()
  }
}

// ------------------------------------------------------------------------------------- (b) SSE fan-out

interface Fanout {
  /** Per delivery: arrival on a stream minus the time its user.message was sent. */
  latencies: number[]
  streams: number
}

/**
 * Opens `perSession` streams on each session, then for `rounds` rounds sends one user.message to each session in
 * turn (the next POST after the previous one's reply, so turns overlap) and records, on every stream, when that
 * message's echo arrives. Between rounds, every stream has seen the round's session.status_idle.
 */
async function troupeFanout(b: Bed, sessions: string[], perSession: number, rounds: number): Promise<Fanout> {
  const sse = streamAgent()
  const conns: SseConnection[] = []
  const waiter = new Waiter()
  const sent = new Map<string, number[]>()
  const latencies: number[] = []
  let idles = 0
  let echoes = 0
  try {
    const targets = sessions.flatMap((sid) => Array.from({ length: perSession }, () => sid))
    await pool(targets, 50, async (sid) => {
      let seen = 0
      const c = openSse(`${b.troupe.url}/v1/sessions/${sid}/events/stream`, sse, (m) => {
        if (m.event === 'user.message') {
          const t0 = sent.get(sid)![seen++]
          if (t0 === undefined) throw new Error(`echo on ${sid} before its send`)
          latencies.push(m.at - t0)
          echoes++
        } else if (m.event === 'session.status_idle') {
          idles++
          waiter.poke()
        }
      })
      conns.push(c)
      await c.opened
    })
    for (const sid of sessions) sent.set(sid, [])
    for (let r = 0; r < rounds; r++) {
      for (const sid of sessions) {
        sent.get(sid)!.push(performance.now())
        await request(b.agent, b.troupe.url, 'POST', `/v1/sessions/${sid}/events`, userMessage(`round ${r}`))
      }
      await waiter.until(
        () => idles >= conns.length * (r + 1),
        `round ${r}: session.status_idle on ${conns.length} streams (have ${idles - conns.length * r})`,
        60_000,
      )
    }
    if (echoes !== conns.length * rounds) throw new Error(`expected ${conns.length * rounds} echoes, got ${echoes}`)
    return { latencies, streams: conns.length }
  } finally {
    for (const c of conns) c.close()
    sse.destroy()
  }
}

/** The same fan-out over raw NATS: one core subscription per stream, one publish per "message", in the same order. */
async function natsFanout(url: string, subjects: number, perSubject: number, rounds: number): Promise<Fanout> {
  const sub = await connect({ servers: url })
  const pub = await connect({ servers: url })
  const latencies: number[] = []
  try {
    const sent = new Map<string, number[]>()
    for (let s = 0; s < subjects; s++) {
      const subject = `bench.fanout.${s}`
      sent.set(subject, [])
      for (let i = 0; i < perSubject; i++) {
        let seen = 0
        sub.subscribe(subject, { callback: () => void latencies.push(performance.now() - sent.get(subject)![seen++]!) })
      }
    }
    await sub.flush()
    const payload = new TextEncoder().encode(JSON.stringify({ type: 'user.message', content: [{ type: 'text', text: 'x' }] }))
    for (let r = 0; r < rounds; r++) {
      for (const subject of sent.keys()) {
        sent.get(subject)!.push(performance.now())
        pub.publish(subject, payload)
        await pub.flush()
      }
      const want = subjects * perSubject * (r + 1)
      for (let i = 0; latencies.length < want; i++) {
        if (i > 10_000) throw new Error(`raw NATS fan-out: ${latencies.length} of ${want} deliveries`)
        await sleep(1)
      }
    }
    return { latencies, streams: subjects * perSubject }
  } finally {
    await sub.close()
    await pub.close()
  }
}

async function sseStreams(): Promise<string[]> {
  const b = await bed()
  try {
    const { agentId, envId } = await agentAndEnvironment(b)
    const create = () => request(b.agent, b.troupe.url, 'POST', '/v1/sessions', { agent: agentId, environment_id: envId }).then((s) => s.id as string)
    const sessions: string[] = []
    await pool(Array.from({ length: STREAM_SESSIONS }), 8, async () => void sessions.push(await create()))
    // Warm the path (JIT, connections, every actor in memory) with one short run.
    await troupeFanout(b, sessions, 1, 1)

    const spread = summary((await troupeFanout(b, sessions, STREAMS_PER_SESSION, STREAM_ROUNDS)).latencies)
    const spreadBase = summary((await natsFanout(b.nats.url, STREAM_SESSIONS, STREAMS_PER_SESSION, STREAM_ROUNDS)).latencies)
    const total = STREAM_SESSIONS * STREAMS_PER_SESSION
    const one = [await create()]
    const single = summary((await troupeFanout(b, one, total, ONE_SESSION_ROUNDS)).latencies)
    const singleBase = summary((await natsFanout(b.nats.url, 1, total, ONE_SESSION_ROUNDS)).latencies)
    const verdict = (p99: number) => `target p99 < 20 ms ${p99 < 20 ? 'ok' : 'MISSED'}`
    return [
      `sessions: ${total} SSE streams (${STREAM_SESSIONS} sessions × ${STREAMS_PER_SESSION}) delivery p50 ${ms(spread.p50)} p99 ${ms(spread.p99)} max ${ms(spread.max)} over ${spread.n} deliveries ` +
        `(raw NATS fan-out p50 ${ms(spreadBase.p50)} p99 ${ms(spreadBase.p99)}; ${(spread.p99 / spreadBase.p99).toFixed(1)}× at p99) — ${verdict(spread.p99)}`,
      `sessions: ${total} SSE streams on one session delivery p50 ${ms(single.p50)} p99 ${ms(single.p99)} max ${ms(single.max)} over ${single.n} deliveries ` +
        `(raw NATS fan-out p50 ${ms(singleBase.p50)} p99 ${ms(singleBase.p99)}; ${(single.p99 / singleBase.p99).toFixed(1)}× at p99) — ${verdict(single.p99)}`,
    ]
  } finally {
    b.stop()
  }
}

// ---------------------------------------------------------------------------------------- (c) idle memory

async function idleSessions(): Promise<string> {
  const b = await bed({ TROUPE_SESSION_IDLE_MS: String(IDLE_MS) })
  try {
    const pid = b.troupe.proc.pid!
    // Let start-up settle (partition leases, projections, JIT) before the baseline reading.
    await sleep(3000)
    const fresh = rssKb(pid)
    const { agentId, envId } = await agentAndEnvironment(b)
    let peak = fresh
    const sampler = setInterval(() => (peak = Math.max(peak, rssKb(pid))), 200)
    const ids: string[] = []
    let createSecs: number
    let created: number
    let after: number
    try {
      const t0 = performance.now()
      await pool(Array.from({ length: IDLE_SESSIONS }), CREATE_CONCURRENCY, async () => {
        const s = await request(b.agent, b.troupe.url, 'POST', '/v1/sessions', { agent: agentId, environment_id: envId })
        ids.push(s.id)
      })
      createSecs = (performance.now() - t0) / 1000
      created = rssKb(pid)
      // Passivation: the sweep runs every IDLE_MS / 2; give it a few rounds, then read RSS once it stops falling.
      await sleep(IDLE_MS * 3)
      after = rssKb(pid)
      for (let i = 0; i < 10; i++) {
        await sleep(500)
        const now = rssKb(pid)
        if (now >= after) break
        after = now
      }
    } finally {
      clearInterval(sampler)
    }
    // A passivated session is still there: the next request rebuilds its actor.
    const again = await request(b.agent, b.troupe.url, 'GET', `/v1/sessions/${ids[0]}`)
    if (again.id !== ids[0]) throw new Error('a passivated session did not come back')
    return (
      `sessions: ${IDLE_SESSIONS} idle sessions RSS ${mb(after)} (fresh process ${mb(fresh)}; ${(after / fresh).toFixed(1)}×; ` +
      `right after creating ${mb(created)}, peak ${mb(peak)}; created at ${(IDLE_SESSIONS / createSecs).toFixed(0)}/s with ${CREATE_CONCURRENCY} in flight) — ` +
      `target < 300 MB ${after < 300 * 1024 ? 'ok' : 'MISSED'}`
    )
  } finally {
    b.stop()
  }
}

// ------------------------------------------------------------------------------------------------ entry

/** Runs the chosen session benchmarks (all by default), printing one block of results. */
export async function runSessionBenches(which: readonly SessionBench[] = SESSION_BENCHES): Promise<void> {
  const lines: string[] = []
  const run = async (name: SessionBench, fn: () => Promise<string | string[]>) => {
    if (!which.includes(name)) return
    try {
      lines.push(...[await fn()].flat())
    } catch (err) {
      lines.push(`sessions: ${name} FAILED: ${(err as Error).stack ?? err}`)
    }
  }
  await run('turn', turnOverhead)
  await run('streams', sseStreams)
  await run('idle', idleSessions)
  await run('calls', sessionCalls)
  await run('events', sessionEvents)
  // Other work on the machine (a test run, another benchmark) shows up in every latency: say how busy it was.
  console.log(`\nsessions, loopback, ${os.cpus().length} CPUs (load average ${os.loadavg()[0]!.toFixed(1)} at the end), instant fake model in its own process`)
  for (const l of lines) console.log(`  ${l}`)
}
