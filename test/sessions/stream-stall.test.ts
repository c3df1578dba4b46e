import t from 'tap'
import { jetstream, jetstreamManager } from '@nats-io/jetstream'
import { connect } from '@nats-io/transport-node'
import { readSessionEvents } from '../../actors/session/index.js'
import { EVENTS_PREFIX, EVENTS_STREAM, eventsSubject } from '../../protocol/subjects.js'
import { startNats } from '../helpers/nats.js'
import { raw } from '../helpers/troupe.js'
import { agentAndEnv, collect, isIdle, sessionStack, until } from './_helpers.js'

// A history read that stalls: nats-server paused (SIGSTOP) while a read has messages pending and gets none. The read
// fails after 10 s (`history_read_stalled`), and an SSE stream reading the history ends with an error event saying so.

t.test('a read paused mid-history: what it pulled, then history_read_stalled, never a short end', async (t) => {
  const nats = await startNats()
  const nc = await connect({ servers: nats.url })
  t.teardown(async () => {
    process.kill(-nats.pgid, 'SIGCONT')
    await nc.close()
    await nats.stop()
  })
  await (await jetstreamManager(nc)).streams.add({ name: EVENTS_STREAM, subjects: [`${EVENTS_PREFIX}.>`] })
  const js = jetstream(nc)
  // Far more messages than one pull takes (256): the pause lands with most of them still on the server.
  const TOTAL = 2000
  const sid = 'sesn_stall'
  await Promise.all(Array.from({ length: TOTAL }, (_, i) => js.publish(eventsSubject(sid), JSON.stringify({ type: 'user.message', i }))))
  const reader = await readSessionEvents(js, sid, 'all', { stallMs: 1000 })
  t.ok(await reader.next(), 'the first message')
  process.kill(-nats.pgid, 'SIGSTOP')
  let read = 1
  const err = await (async () => {
    try {
      while (await reader.next()) read++
    } catch (e) {
      return e
    }
  })()
  process.kill(-nats.pgid, 'SIGCONT')
  t.ok(read < TOTAL, `stopped after the ${read} messages it had pulled`)
  t.match(err, { status: 503, reason: 'history_read_stalled' }, 'failed, not ended short')
})

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
  // A history to replay. Where the pause lands (in the replay, or in the read that catches up after it) depends on the
  // machine's speed; the stream ends with the error either way (the read itself is tested mid-history above).
  for (let turn = 0; turn < 3; turn++) {
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
  t.ok(all.data.length > seen.length - 1, `the whole history (${all.data.length} events)`)
})
