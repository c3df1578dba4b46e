// `threads`: what a coordinator's turn costs beyond its model (issue 28). The fake model answers every request after a
// fixed delay D (BENCH_MODEL_DELAY_MS, default 200 ms), so each kind of turn has a known critical path: a single agent's
// turn one request (D); a coordinator sending three tasks at once three (its request, the three children's at once, its
// answer: 3D); an advisor call three (3D); an outcome's turn with one grader pass two (2D). Each turn is timed from
// its POST to its `session.status_idle` on an open SSE stream, on the server as `npm start` runs it; the figure is the
// wall time over the critical path, p50/p99.
import { performance } from 'node:perf_hooks'
import { bed, ms, request, summary, userMessage } from './bed.js'
import { openSse, streamAgent } from './sse-client.js'

const TURNS = Number(process.env.BENCH_THREAD_TURNS ?? 30)
const DELAY_MS = Number(process.env.BENCH_MODEL_DELAY_MS ?? 200)

export async function runThreadBench(): Promise<void> {
  console.log(`\nthreads: turn wall time over the model's critical path (each request answered after ${DELAY_MS} ms), ${TURNS} turns each`)
  const b = await bed({}, { BENCH_MODEL_SCRIPT: 'threads', BENCH_MODEL_DELAY_MS: String(DELAY_MS) })
  try {
    const post = (p: string, body: unknown) => request(b.agent, b.troupe.url, 'POST', p, body)
    const env = await post('/v1/environments', { name: 'bench' })
    const member = await post('/v1/agents', { name: 'member', model: 'claude-sonnet-4-6', system: 'MEMBER' })
    const agents = {
      single: await post('/v1/agents', { name: 'solo', model: 'claude-sonnet-4-6', system: 'SOLO' }),
      coordinator: await post('/v1/agents', {
        name: 'lead',
        model: 'claude-sonnet-4-6',
        system: 'LEAD',
        multiagent: { type: 'coordinator', agents: [member.id] },
      }),
      advisor: await post('/v1/agents', {
        name: 'advised',
        model: 'claude-sonnet-4-6',
        system: 'ADVISED',
        multiagent: { type: 'coordinator', agents: [member.id, { type: 'advisor', model: 'claude-opus-4-6' }] },
      }),
      outcome: await post('/v1/agents', { name: 'graded', model: 'claude-sonnet-4-6', system: 'SOLO' }),
    }
    const path = { single: 1, coordinator: 3, advisor: 3, outcome: 2 }
    const streams = streamAgent()
    const rows: string[] = []
    for (const [kind, agent] of Object.entries(agents) as Array<[keyof typeof path, { id: string }]>) {
      const times: number[] = []
      for (let i = 0; i < TURNS; i++) {
        const session = await post('/v1/sessions', { agent: agent.id, environment_id: env.id })
        let idle: (at: number) => void = () => undefined
        const done = new Promise<number>((resolve) => (idle = resolve))
        const sse = openSse(`${b.troupe.url}/v1/sessions/${session.id}/events/stream`, streams, (m) => {
          if (m.event === 'session.status_idle') idle(m.at)
        })
        await sse.opened
        const start = performance.now()
        const body =
          kind === 'outcome'
            ? { events: [{ type: 'user.define_outcome', description: 'do it', rubric: { type: 'text', content: 'done' } }] }
            : userMessage('go')
        await post(`/v1/sessions/${session.id}/events`, body)
        times.push((await done) - start)
        sse.close()
      }
      const s = summary(times)
      const critical = path[kind] * DELAY_MS
      rows.push(
        `  ${kind.padEnd(12)} critical path ${ms(critical).padStart(9)}; wall p50 ${ms(s.p50).padStart(9)} (+${ms(s.p50 - critical)}), p99 ${ms(s.p99).padStart(9)} (+${ms(s.p99 - critical)}); ${(s.p50 / critical).toFixed(2)}× at p50`,
      )
    }
    streams.destroy()
    for (const r of rows) console.log(r)
  } finally {
    b.stop()
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await runThreadBench()
