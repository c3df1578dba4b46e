// `sessions.events`: GET /v1/sessions/{id}/events from a session holding 100,000 events (BENCH_EVENTS), published
// straight into the events stream in the stored format (headers and JSON exactly as the session actor writes them,
// client events marked handled both ways: the next event's Troupe-Processed header and a `_processed` record).
// Pages of 100: the first, one from the middle by cursor, the first in desc order, and a types[] filter; the
// baseline is the same 100 records read raw from JetStream in the same run (direct gets, one after the other, and
// one consumer fetch). Target: a page in under 20 ms (p50; p99 shows what else the machine was doing).
import { performance } from 'node:perf_hooks'
import { jetstream, jetstreamManager, DeliverPolicy, AckPolicy } from '@nats-io/jetstream'
import { connect, headers } from '@nats-io/transport-node'
import { encodeCursor } from '../../protocol/cursor.js'
import { EventHeaders } from '../../protocol/events.js'
import { newId } from '../../protocol/ids.js'
import { EVENTS_STREAM, eventsSubject, eventsWildcard } from '../../protocol/subjects.js'
import { agentAndEnvironment, bed, ms, request, summary } from './bed.js'

const EVENTS = Number(process.env.BENCH_EVENTS ?? 100_000)
const ROUNDS = Number(process.env.BENCH_EVENT_PAGES ?? 50)
const PAGE = 100
/** Records of one turn (below); every fifth turn's user.message is marked by a `_processed` record instead. */
const TURN = 10

const enc = new TextEncoder()

interface Rec {
  type: string
  id?: string
  processed?: string
  body: Record<string, unknown>
}

/** One turn as the actor stores it: the message, then the events of handling it, the first naming it handled. */
function turn(i: number, at: string): Rec[] {
  const msg = newId('sevt')
  const ev = (type: string, fields: Record<string, unknown> = {}): Rec => {
    const id = newId('sevt')
    return { type, id, body: { type, id, ...fields, processed_at: at } }
  }
  const viaRecord = i % 5 === 0
  const recs: Rec[] = [
    { type: 'user.message', id: msg, body: { type: 'user.message', id: msg, content: [{ type: 'text', text: `turn ${i}` }], processed_at: null } },
  ]
  if (viaRecord) recs.push({ type: '_processed', body: { type: '_processed', ids: [msg], processed_at: at } })
  const running = ev('session.status_running')
  if (!viaRecord) running.processed = msg
  const start = ev('span.model_request_start')
  recs.push(
    running,
    start,
    ev('agent.message', { content: [{ type: 'text', text: `answer ${i} `.repeat(8) }] }),
    ev('agent.tool_use', { name: 'bash', input: { command: 'ls' }, evaluated_permission: 'allow' }),
    ev('agent.tool_result', { tool_use_id: 'x', content: [{ type: 'text', text: 'a b c' }], is_error: false }),
    ev('span.model_request_end', {
      model_request_start_id: start.id,
      is_error: false,
      model_usage: { input_tokens: 10, output_tokens: 5, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, speed: null },
    }),
    ev('session.status_idle', { stop_reason: { type: 'end_turn' }, stop_details: null }),
  )
  return recs.slice(0, viaRecord ? TURN : TURN - 1)
}

async function time(n: number, fn: () => Promise<unknown>): Promise<number[]> {
  await fn()
  const out: number[] = []
  for (let i = 0; i < n; i++) {
    const t0 = performance.now()
    await fn()
    out.push(performance.now() - t0)
  }
  return out
}

export async function sessionEvents(): Promise<string[]> {
  // Idle actors leave memory fast, so the reads below take the path of an idle session (record + stream).
  const b = await bed({ TROUPE_SESSION_IDLE_MS: '200' })
  const nc = await connect({ servers: b.nats.url })
  try {
    const { agentId, envId } = await agentAndEnvironment(b)
    const s = await request(b.agent, b.troupe.url, 'POST', '/v1/sessions', { agent: agentId, environment_id: envId })
    const js = jetstream(nc)
    const subject = eventsSubject(s.id)
    const t0 = performance.now()
    const seqs: number[] = []
    let last = ''
    for (let i = 0, stored = 0; stored < EVENTS; i++) {
      const at = new Date(Date.parse('2026-01-01T00:00:00Z') + i * 1000).toISOString()
      const batch = turn(i, at).slice(0, EVENTS - stored)
      const acks = batch.map((r) => {
        const h = headers()
        h.set(EventHeaders.type, r.type)
        if (r.id) h.set(EventHeaders.id, r.id)
        if (r.processed) h.set(EventHeaders.processed, r.processed)
        return js.publish(subject, enc.encode(JSON.stringify(r.body)), { headers: h })
      })
      for (const a of await Promise.all(acks)) seqs.push(a.seq)
      stored += batch.length
      last = batch.filter((r) => r.id).pop()?.id ?? last
    }
    const fillSecs = (performance.now() - t0) / 1000
    const url = (q: string) => `/v1/sessions/${s.id}/events?${q}`
    // The actor that created the session passivates; from then on the list sees the stream's last record.
    for (let i = 0; ; i++) {
      const page = await request(b.agent, b.troupe.url, 'GET', url('order=desc&limit=1'))
      if (page.data[0]?.id === last) break
      if (i > 600) throw new Error('the session never showed its published events')
      await new Promise((r) => setTimeout(r, 100))
    }

    const middle = encodeCursor(`session_events:${s.id}`, { order: 'asc' }, seqs[seqs.length >> 1])
    const get = (q: string) => () =>
      request(b.agent, b.troupe.url, 'GET', url(q)).then((p) => {
        if (p.data.length !== PAGE) throw new Error(`${q}: ${p.data.length} events`)
      })
    const first = summary(await time(ROUNDS, get(`limit=${PAGE}`)))
    const mid = summary(await time(ROUNDS, get(`limit=${PAGE}&page=${middle}`)))
    const desc = summary(await time(ROUNDS, get(`limit=${PAGE}&order=desc`)))
    const typed = summary(await time(ROUNDS, get(`limit=${PAGE}&types[]=agent.tool_use`)))

    // Baselines: the middle page's records straight from JetStream.
    const jsm = await jetstreamManager(nc)
    const from = seqs[seqs.length >> 1]!
    const direct = summary(
      await time(ROUNDS, async () => {
        let seq = from
        for (let i = 0; i < PAGE; i++) {
          const m = await jsm.direct.getMessage(EVENTS_STREAM, { seq, next_by_subj: eventsWildcard(s.id) })
          seq = m!.seq + 1
        }
      }),
    )
    const fetch = summary(
      await time(ROUNDS, async () => {
        const ci = await jsm.consumers.add(EVENTS_STREAM, {
          filter_subject: eventsWildcard(s.id),
          deliver_policy: DeliverPolicy.StartSequence,
          opt_start_seq: from,
          ack_policy: AckPolicy.None,
          mem_storage: true,
          inactive_threshold: 30_000_000_000,
        })
        const c = js.consumers.getConsumerFromInfo(ci)
        let n = 0
        for await (const _ of await c.fetch({ max_messages: PAGE, expires: 5000 })) if (++n === PAGE) break
        void c.delete().catch(() => undefined)
      }),
    )
    const line = (name: string, x: ReturnType<typeof summary>) =>
      `  ${name.padEnd(34)} p50 ${ms(x.p50).padStart(9)}  p99 ${ms(x.p99).padStart(9)}  (${(x.p50 / direct.p50).toFixed(2)}× raw direct gets at p50) — target p50 < 20 ms ${x.p50 < 20 ? 'ok' : 'MISSED'}`
    return [
      `sessions.events: ${EVENTS} events in one session (stored in ${fillSecs.toFixed(1)} s), pages of ${PAGE}, ${ROUNDS} rounds each`,
      line('first page (asc)', first),
      line('middle page (asc, by cursor)', mid),
      line('first page (desc)', desc),
      line('types[]=agent.tool_use (1 in 10)', typed),
      `  raw: ${PAGE} direct gets one after the other p50 ${ms(direct.p50)} p99 ${ms(direct.p99)}; one consumer fetch of ${PAGE} p50 ${ms(fetch.p50)} p99 ${ms(fetch.p99)}`,
    ]
  } finally {
    await nc.close()
    b.stop()
  }
}
