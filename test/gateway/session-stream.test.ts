import t from 'tap'
import { connect } from '@nats-io/transport-node'
import { jetstream } from '@nats-io/jetstream'
import { formatSseRaw } from '../../gateway/sse.js'
import { EventHeaders } from '../../protocol/events.js'
import { newId } from '../../protocol/ids.js'
import { EVENTS_STREAM, eventsWildcard, liveSubject } from '../../protocol/subjects.js'
import { guard, sseReader, type SseMsg } from '../helpers/sse-reader.js'
import { agentAndEnv, collect, isIdle, sessionStack, until } from '../sessions/_helpers.js'

// The SSE tail of a session against the real thing: a `troupe serve` (gateway and session actor), its nats-server and
// the fake model. The owner runs beside the gateway, so it feeds the tails in-process; session-stream-nats.test.ts
// runs the same tests with TROUPE_LOCAL_CALLS=0, where every tail listens over NATS. Every event is written by the session actor in a real turn; what a stream sends is compared with
// what the events stream holds, read independently over JetStream. Interleavings the real owner produces only by
// chance are forced in session-stream-races.test.ts.

/** Set by session-stream-nats.test.ts: tails listen over NATS, as a gateway does for sessions owned elsewhere. */
const VIA_NATS = process.env.TEST_SSE_VIA_NATS === '1'
const s = await sessionStack({ TROUPE_SSE_KEEPALIVE_MS: '200', ...(VIA_NATS ? { TROUPE_LOCAL_CALLS: '0' } : {}) })
const nc = await connect({ servers: s.nats.url })
t.teardown(() => void nc.close())
const js = jetstream(nc)

interface Stored {
  seq: number
  id: string | undefined
  type: string
  json: string
}

/**
 * Every event stored for the session, internal records included, in stream order: read here over JetStream, not by
 * the server. A message of several events (`Troupe-Parts`: their JSON on lines, types and ids comma-separated) gives
 * each, in order.
 */
async function stored(sid: string): Promise<Stored[]> {
  const c = await js.consumers.get(EVENTS_STREAM, { filter_subjects: eventsWildcard(sid) })
  const out: Stored[] = []
  let left = (await c.info(true)).num_pending
  if (left > 0) {
    for await (const m of await c.fetch({ max_messages: left })) {
      const h = m.headers
      const many = h?.get('Troupe-Parts')
      const jsons = many ? m.string().split('\n') : [m.string()]
      const types = (h?.get('Troupe-Type') ?? '').split(',')
      const eventIds = (h?.get('Troupe-Event-Id') ?? '').split(',')
      if (jsons.length !== (many ? Number(many) : 1)) throw new Error(`message ${m.seq} holds ${jsons.length} events, says ${many}`)
      for (const [i, json] of jsons.entries()) out.push({ seq: m.seq, id: eventIds[i] || undefined, type: types[i] ?? '', json })
      if (--left === 0) break
    }
  }
  await c.delete().catch(() => undefined)
  return out
}
/** The events a client may see (no internal records), after the one with id `after` when given. */
async function visible(sid: string, after?: string): Promise<Stored[]> {
  const all = (await stored(sid)).filter((m) => !m.type.startsWith('_'))
  return after === undefined ? all : all.slice(all.findIndex((m) => m.id === after) + 1)
}

const say = (text: string) => ({ events: [{ type: 'user.message', content: [{ type: 'text', text }] }] })

/** One turn through the official client, to idle. */
async function turn(sid: string, text: string): Promise<void> {
  const stream = await s.client.beta.sessions.events.stream(sid)
  await s.client.beta.sessions.events.send(sid, say(text) as any)
  await collect(stream, isIdle, 30_000)
}

async function newSession(): Promise<string> {
  const { agent, env } = await agentAndEnv(s.client)
  return (await s.client.beta.sessions.create({ agent: agent.id, environment_id: env.id } as any)).id
}

async function openStream(sid: string, query = '', hdrs: Record<string, string> = {}) {
  const res = await guard(fetch(`${s.url}/v1/sessions/${sid}/events/stream${query ? `?${query}` : ''}`, { headers: hdrs }), 'stream headers')
  return { res, sse: sseReader(res) }
}

/** Messages until (and with) the first that `pred` matches, waiting as they come. */
async function takeUntil(sse: ReturnType<typeof sseReader>, pred: (m: SseMsg) => boolean, from = 0): Promise<SseMsg[]> {
  for (let n = from + 1; ; n++) {
    const got = await sse.take(n)
    if (pred(got[n - 1]!)) return got.slice(from)
  }
}
const ids = (ms: SseMsg[]) => ms.map((m) => m.id)
const idle = (m: SseMsg) => m.event === 'session.status_idle'

/** The gateway's subscriptions to a session's live subject, as nats-server counts them. */
async function liveSubscriptions(sid: string): Promise<number> {
  const connz = await (await fetch(`${s.nats.monitorUrl}/connz?subs=1&limit=1024`)).json()
  return (connz.connections as Array<{ subscriptions_list?: string[] }>)
    .flatMap((c) => c.subscriptions_list ?? [])
    .filter((x) => x === `troupe.live.${sid}.primary`).length
}

t.test('formatSseRaw writes stored JSON as is', async (t) => {
  t.equal(formatSseRaw('agent.message', '{"a":1}', 'sevt_1'), 'event: agent.message\nid: sevt_1\ndata: {"a":1}\n\n')
  t.equal(formatSseRaw('event_delta', '{}'), 'event: event_delta\ndata: {}\n\n', 'no id line without an id')
  t.equal(formatSseRaw('x', '{\n"a":\r\n1}'), 'event: x\ndata: {\ndata: "a":\ndata: 1}\n\n', 'a line break in the JSON splits data lines')
})

t.test('RePublish feeds the live subject with what the session actor stores', async (t) => {
  const sid = await newSession()
  const sub = nc.subscribe(`troupe.live.${sid}.>`)
  await nc.flush()
  await s.client.beta.sessions.events.send(sid, say('hello') as any)
  let republished: { subject: string; type?: string; id?: string; seq: number; data: string } | undefined
  for await (const m of sub) {
    const seq = m.headers?.get(EventHeaders.sequence)
    if (!seq) continue // a preview: not stored
    republished = { subject: m.subject, type: m.headers?.get(EventHeaders.type), id: m.headers?.get(EventHeaders.id), seq: Number(seq), data: m.string() }
    break
  }
  sub.unsubscribe()
  const first = (await stored(sid))[0]!
  t.same(republished, { subject: liveSubject(sid), type: 'user.message', id: first.id, seq: first.seq, data: first.json })
  t.match(JSON.parse(first.json), { type: 'user.message', id: first.id, content: [{ type: 'text', text: 'hello' }] })
  await until('the turn to end', async () => (await s.client.beta.sessions.retrieve(sid)).status === 'idle')
})

t.test('live: the events stored after the open, in order, framed with event and id, payload as stored; earlier ones are not replayed', async (t) => {
  const sid = await newSession()
  await turn(sid, 'before')
  const before = await visible(sid)
  const { res, sse } = await openStream(sid)
  t.equal(res.status, 200)
  t.equal(res.headers.get('content-type'), 'text/event-stream')
  t.match(res.headers.get('request-id'), /^req_/)
  await s.client.beta.sessions.events.send(sid, say('during') as any)
  const got = await takeUntil(sse, idle)
  const expected = (await visible(sid)).slice(before.length)
  t.same(
    got.map((m) => [m.id, m.event, m.data]),
    expected.map((e) => [e.id, e.type, e.json]),
  )
  t.same(
    got.map((m) => m.event),
    ['user.message', 'session.status_running', 'span.model_request_start', 'agent.message', 'span.model_request_end', 'session.status_idle'],
  )
  t.equal(got[0]!.raw, `event: user.message\nid: ${expected[0]!.id}\ndata: ${expected[0]!.json}`)
  t.notOk(
    got.some((m) => before.some((b) => b.id === m.id)),
    'nothing from before the open',
  )
  await sse.cancel()
})

t.test('?after= replays what followed, then goes live, while a turn writes: every stored event after the cursor once, in order', async (t) => {
  const sid = await newSession()
  await turn(sid, 'one')
  await turn(sid, 'two')
  const cursor = (await visible(sid))[2]!.id!
  // A slow reply: the turn stores events while the stream opens, replays and goes live.
  s.model.enqueue({ steps: [{ type: 'text', text: 'a slow reply in several parts', chunks: 6 }], chunkDelayMs: 40 })
  const third = await s.client.beta.sessions.events.stream(sid)
  await s.client.beta.sessions.events.send(sid, say('three') as any)
  const { res, sse } = await openStream(sid, `after=${cursor}`)
  t.equal(res.status, 200)
  await collect(third, isIdle, 30_000)
  const expected = await visible(sid, cursor)
  const got = await sse.take(expected.length)
  t.same(ids(got), ids(expected as any), 'every stored event after the cursor, in stream order, once')
  // Nothing more arrives: the next stored event is the very next message.
  await s.client.beta.sessions.events.send(sid, say('four') as any)
  const next = (await takeUntil(sse, idle, expected.length))[0]!
  t.equal(next.event, 'user.message')
  t.equal(next.id, (await visible(sid, expected.at(-1)!.id))[0]!.id)
  await sse.cancel()
})

t.test('Last-Event-ID replays too; ?after= wins over it; after the last event, straight to live', async (t) => {
  const sid = await newSession()
  await turn(sid, 'one')
  const evs = await visible(sid)
  const a = await openStream(sid, '', { 'last-event-id': evs[2]!.id! })
  t.same(ids(await a.sse.take(evs.length - 3)), ids(evs.slice(3) as any))
  await a.sse.cancel()
  const b = await openStream(sid, `after=${evs[4]!.id}`, { 'last-event-id': 'sevt_bogus' })
  t.equal(b.res.status, 200)
  t.same(ids(await b.sse.take(evs.length - 5)), ids(evs.slice(5) as any))
  await b.sse.cancel()
  const c = await openStream(sid, `after=${evs.at(-1)!.id}`)
  await s.client.beta.sessions.events.send(sid, say('two') as any)
  const live = await takeUntil(c.sse, idle)
  t.same(ids(live), ids((await visible(sid, evs.at(-1)!.id)) as any))
  await c.sse.cancel()
})

t.test('an unknown after or Last-Event-ID is a 400 JSON envelope, before any SSE', async (t) => {
  const sid = await newSession()
  const other = await newSession()
  await turn(sid, 'mine')
  await turn(other, 'theirs')
  const foreign = (await visible(other))[0]!.id!
  for (const [query, hdrs, name] of [
    [`after=${newId('sevt')}`, {}, 'after'],
    [`after=${foreign}`, {}, 'after'],
    ['after=garbage', {}, 'after'],
    ['', { 'last-event-id': newId('sevt') }, 'Last-Event-ID'],
  ] as const) {
    const r = await fetch(`${s.url}/v1/sessions/${sid}/events/stream?${query}`, { headers: hdrs })
    t.equal(r.status, 400, `${query} ${JSON.stringify(hdrs)}`)
    t.equal(r.headers.get('content-type'), 'application/json')
    const body = await r.json()
    t.equal(body.type, 'error')
    t.equal(body.error.type, 'invalid_request_error')
    t.match(body.error.message, name)
    t.equal(body.request_id, r.headers.get('request-id'))
  }
  const empty = await newSession()
  const r = await fetch(`${s.url}/v1/sessions/${empty}/events/stream?after=${foreign}`)
  t.equal(r.status, 400, 'a session without events has no event to resume after')
  await r.body?.cancel()
})

t.test('bad query values are 400s naming the parameter; an unknown session is a 404 JSON, no SSE', async (t) => {
  const sid = await newSession()
  const bad = await fetch(`${s.url}/v1/sessions/${sid}/events/stream?event_deltas[]=agent.tool_use`)
  t.equal(bad.status, 400)
  t.match((await bad.json()).error.message, /event_deltas/)
  const missing = await fetch(`${s.url}/v1/sessions/${newId('sesn')}/events/stream`, { headers: { accept: 'text/event-stream' } })
  t.equal(missing.status, 404)
  t.equal(missing.headers.get('content-type'), 'application/json')
  t.equal((await missing.json()).error.type, 'not_found_error')
})

t.test('event_deltas: previews only when asked, never with an id, each before the event it previews', async (t) => {
  const sid = await newSession()
  const plain = await openStream(sid)
  const messages = await openStream(sid, 'event_deltas=agent.message')
  const both = await openStream(sid, 'event_deltas[]=agent.message&event_deltas[]=agent.thinking')
  s.model.enqueue({
    steps: [
      { type: 'thinking', thinking: 'let me think about it' },
      { type: 'text', text: 'Hello there, in parts', chunks: 3 },
    ],
  })
  await s.client.beta.sessions.events.send(sid, say('hi') as any)
  const p = await takeUntil(plain.sse, idle)
  const m = await takeUntil(messages.sse, idle)
  const b = await takeUntil(both.sse, idle)
  const stored = await visible(sid)
  t.same(ids(p), ids(stored as any), 'without event_deltas: the stored events only')
  const message = stored.find((e) => e.type === 'agent.message')!
  const thinking = stored.find((e) => e.type === 'agent.thinking')!
  const previewsOf = (ms: SseMsg[], id: string) =>
    ms.filter((x) => {
      if (x.event !== 'event_start' && x.event !== 'event_delta') return false
      const d = JSON.parse(x.data)
      return d.event?.id === id || d.event_id === id
    })
  const mine = previewsOf(m, message.id!)
  t.equal(mine[0]?.event, 'event_start', 'the start first')
  t.ok(mine.filter((x) => x.event === 'event_delta').length >= 1, 'then deltas')
  t.same(
    mine
      .filter((x) => x.event === 'event_delta')
      .map((x) => JSON.parse(x.data).delta.content.text)
      .join(''),
    JSON.parse(message.json).content[0].text,
    'the deltas add up to the stored message',
  )
  t.ok(m.indexOf(mine.at(-1)!) < m.findIndex((x) => x.id === message.id), 'every preview before the stored message')
  t.notOk(
    mine.some((x) => x.raw.includes('\nid:') || x.id !== undefined),
    'no id line on a preview',
  )
  t.same(previewsOf(m, thinking.id!), [], 'no thinking previews unless asked')
  t.equal(previewsOf(b, thinking.id!)[0]?.event, 'event_start', 'thinking previews when asked')
  t.same(
    m.filter((x) => x.id).map((x) => x.id),
    ids(stored as any),
    'the stored events all the same',
  )
  for (const x of [plain, messages, both]) await x.sse.cancel()
})

t.test('internal records are never sent, live or replayed', async (t) => {
  const sid = await newSession()
  await turn(sid, 'one')
  const live = await openStream(sid)
  // An interrupt of an idle session is handled with nothing to follow it: a `_processed` record marks it so.
  await s.client.beta.sessions.events.send(sid, { events: [{ type: 'user.interrupt' }] } as any)
  await until('the interrupt marked handled', async () => (await stored(sid)).some((m) => m.type.startsWith('_')), 10_000)
  await s.client.beta.sessions.events.send(sid, say('two') as any)
  const seen = await takeUntil(live.sse, idle)
  const all = await stored(sid)
  t.ok(
    all.some((m) => m.type.startsWith('_')),
    `the history holds internal records (${[...new Set(all.filter((m) => m.type.startsWith('_')).map((m) => m.type))].join(', ')})`,
  )
  const replay = await openStream(sid, `after=${all.find((m) => m.id)!.id}`)
  const replayed = await replay.sse.take((await visible(sid)).length - 1)
  for (const x of [live, replay]) await x.sse.cancel()
  t.notOk(
    [...seen, ...replayed].some((m) => m.event?.startsWith('_') || m.data.includes('"type":"_')),
    'none in either',
  )
})

t.test(
  `streams of one session ${VIA_NATS ? 'share one live subscription' : 'are fed in-process, with no subscription'}; each gets every event once, in order; the last to leave unsubscribes`,
  async (t) => {
    const sid = await newSession()
    const other = await newSession()
    const streams = await Promise.all([openStream(sid), openStream(sid), openStream(sid)])
    const elsewhere = await openStream(other)
    const subscribed = VIA_NATS ? 1 : 0
    t.equal(await liveSubscriptions(sid), subscribed, VIA_NATS ? 'one subscription for three streams' : 'no subscription')
    t.equal(await liveSubscriptions(other), subscribed)
    await s.client.beta.sessions.events.send(sid, say('fan out') as any)
    const got = await Promise.all(streams.map((x) => takeUntil(x.sse, idle)))
    const expected = ids((await visible(sid)) as any)
    for (const g of got) t.same(ids(g), expected, 'every event once, in order')
    t.same(
      got[1]!.map((m) => m.raw),
      got[0]!.map((m) => m.raw),
      'the same frames on every stream',
    )
    for (const x of streams.slice(0, 2)) await x.sse.cancel()
    t.equal(await liveSubscriptions(sid), subscribed, 'still as subscribed for the stream left')
    await s.client.beta.sessions.events.send(sid, say('still fed') as any)
    t.equal((await takeUntil(streams[2]!.sse, idle, got[2]!.length))[0]!.event, 'user.message', 'the remaining stream is still fed')
    await streams[2]!.sse.cancel()
    await elsewhere.sse.cancel()
    await until('the last stream of each session to unsubscribe', async () => (await liveSubscriptions(sid)) + (await liveSubscriptions(other)) === 0)
    t.pass('no subscription left')
  },
)

t.test('the official client iterates the stream, previews included', async (t) => {
  const sid = await newSession()
  const stream = await s.client.beta.sessions.events.stream(sid, { event_deltas: ['agent.message'] })
  await s.client.beta.sessions.events.send(sid, say('hi') as any)
  const seen = await collect(stream, isIdle, 30_000)
  const stored = await visible(sid)
  t.same(
    seen.filter((e) => e.id && e.type !== 'event_start' && e.type !== 'event_delta').map((e) => e.id),
    ids(stored as any),
  )
  t.ok(
    seen.some((e) => e.type === 'event_delta'),
    'deltas came through',
  )
  t.same(seen[0], JSON.parse(stored[0]!.json), 'events as stored')
  const gone = await s.client.beta.sessions.events.stream(newId('sesn')).then(
    () => undefined,
    (e: { status?: number }) => e.status,
  )
  t.equal(gone, 404, 'an unknown session throws NotFoundError')
})

t.test('a deleted session: the deletion notice, then the stream ends; keepalive comments meanwhile', async (t) => {
  const sid = await newSession()
  await turn(sid, 'one')
  const a = await openStream(sid)
  const b = await openStream(sid, 'event_deltas[]=agent.message')
  await a.sse.untilComment(': keepalive')
  t.pass('a keepalive comment while nothing happens')
  await s.client.beta.sessions.delete(sid)
  for (const x of [a, b]) {
    const all = await x.sse.toEnd()
    t.same(
      all.map((m) => m.event),
      ['session.deleted'],
    )
    t.equal(JSON.parse(all[0]!.data).type, 'session.deleted')
  }
  await until('the subscription to be dropped', async () => (await liveSubscriptions(sid)) === 0)
})

t.test('stopping the server ends its open streams', async (t) => {
  const sid = await newSession()
  const { sse } = await openStream(sid)
  await s.client.beta.sessions.events.send(sid, say('hi') as any)
  await takeUntil(sse, idle)
  await s.troupe.stop()
  await sse.toEnd()
  t.ok(sse.ended, 'ended')
})
