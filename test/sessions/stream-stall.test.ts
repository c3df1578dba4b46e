import t from 'tap'
import { raw } from '../helpers/troupe.js'
import { agentAndEnv, collect, isIdle, sessionStack, until } from './_helpers.js'

// A history read that stalls: nats-server paused (SIGSTOP) while an SSE stream replays a long history. The read has
// messages pending and gets none; after 10 s it fails, and the stream ends with an error event saying so.

// Fifteen turns to build the history, then the 10 s stall: over a minute on a loaded machine, near tap's 120 s default.
t.setTimeout(300_000)

const s = await sessionStack()
t.teardown(() => {
  try {
    process.kill(-s.nats.pgid, 'SIGCONT')
  } catch {}
})

/** SSE frames as they arrive: `event` and `data` of each message, comments left out. */
async function* frames(res: Response): AsyncGenerator<{ event: string; data: string }> {
  const dec = new TextDecoder()
  let buf = ''
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    buf += dec.decode(chunk, { stream: true })
    let i: number
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, i)
      buf = buf.slice(i + 2)
      const event = /^event: (.*)$/m.exec(block)?.[1]
      const data = [...block.matchAll(/^data: (.*)$/gm)].map((m) => m[1]).join('\n')
      if (event) yield { event, data }
    }
  }
}

t.test('nats-server paused during a replay: after 10 s without a message, an error event history_read_stalled, then the end', async (t) => {
  const { agent, env } = await agentAndEnv(s.client)
  const session = await s.client.beta.sessions.create({ agent: agent.id, environment_id: env.id } as any)
  // Some 1,600 stored events: far more than one pull of the read (256) takes, so the pause lands mid-replay.
  for (let turn = 0; turn < 15; turn++) {
    const stream = await s.client.beta.sessions.events.stream(session.id)
    const events = Array.from({ length: 100 }, (_, i) => ({ type: 'user.message', content: [{ type: 'text', text: `${turn}.${i}` }] }))
    await s.client.beta.sessions.events.send(session.id, { events } as any)
    await collect(stream, isIdle, 30_000)
  }
  const first = (await s.client.beta.sessions.events.list(session.id, { limit: 1 } as any)).data[0]!
  const res = await fetch(`${s.url}/v1/sessions/${session.id}/events/stream?after=${first.id}`)
  t.equal(res.status, 200)
  const seen: string[] = []
  let error: { event: string; data: string } | undefined
  const read = (async () => {
    for await (const f of frames(res)) {
      if (f.event === 'error') error = f
      else seen.push(f.event)
    }
  })()
  await until('the replay to begin', () => seen.length > 0, 30_000, 5)
  process.kill(-s.nats.pgid, 'SIGSTOP')
  try {
    // Bounded: the read's 10 s, and a loaded machine.
    await Promise.race([read, new Promise((_, reject) => setTimeout(() => reject(new Error('the stream did not end')), 40_000).unref())])
  } finally {
    process.kill(-s.nats.pgid, 'SIGCONT')
  }
  t.ok(error, `an error event after ${seen.length} replayed events`)
  t.ok(seen.length < 1500, `the replay stopped short (${seen.length} events)`)
  t.same(JSON.parse(error!.data).error, { type: 'overloaded_error', message: 'Reading the session history stalled; retry shortly' })
  // Resumed, the server reads the whole history again.
  const all = await until(
    'the history to be read again',
    async () => {
      const r = await raw(s.url, 'GET', `/v1/sessions/${session.id}/events?limit=1000`)
      return r.status === 200 && r.json
    },
    30_000,
    200,
  )
  t.equal(all.data.length, 1000)
})
