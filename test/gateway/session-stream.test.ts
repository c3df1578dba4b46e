import t from 'tap'
import '../helpers/keepalive.js'
import { connect, headers as natsHeaders, type Msg } from '@nats-io/transport-node'
import { jetstream, jetstreamManager } from '@nats-io/jetstream'
import Anthropic from '@anthropic-ai/sdk'
import { encodeTime } from 'ulid'
import { pino } from 'pino'
import { startGateway, type Gateway } from '../../gateway/server.js'
import { actorAccess } from '../../supervisor/actor-access.js'
import { formatSseRaw } from '../../gateway/sse.js'
import { decode, encode } from '../../protocol/codec.js'
import type { ActorReply, ActorRequest } from '../../protocol/envelope.js'
import { EventHeaders } from '../../protocol/events.js'
import { newId } from '../../protocol/ids.js'
import { EVENTS_STREAM, eventsSubject, eventsWildcard, liveSubject, partitionedSubject } from '../../protocol/subjects.js'
import { startNats } from '../helpers/nats.js'
import { TRANSPORT } from '../helpers/transport.js'
import { ensureEventsStream } from '../../actors/session/log.js'
import { until } from '../helpers/wait.js'

// The SSE tail against a real nats-server and an in-process gateway. The session actor is played by a tiny
// responder answering `stream.open` with the last stored sequence of the session, as the real owner does.

/** gateway/session-stream.ts reads from this long before an id's mint time. */
const ID_SLACK_MS = 5_000

const nats = await startNats()
const nc = await connect({ servers: nats.url })
const jsm = await jetstreamManager(nc)
// The stream exactly as actor hosts create it: its RePublish is what feeds the live tail.
const log = pino({ level: 'silent' })
await ensureEventsStream({ jsm, replicas: 1, log })
const js = jetstream(nc)
const gw = await startGateway({ nc, actors: actorAccess(nc), log, port: 0, transport: TRANSPORT, sseKeepaliveMs: 0 })
const base = `http://127.0.0.1:${gw.port}`
t.teardown(async () => {
  gw.close()
  await nc.close()
  await nats.stop()
})

/** Failure guard only: every wait ends on an event, this keeps a broken build from hanging. */
function guard<T>(p: Promise<T>, what: string, ms = 10_000): Promise<T> {
  let timer: NodeJS.Timeout
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms)
  })
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer))
}

// ---- the stand-in session owner ---------------------------------------------------------------------------

interface Owner {
  /** Unknown sessions answer 404. */
  known: boolean
  /** Runs before the reply (publish "during" the open). */
  beforeReply?: () => Promise<void>
  /** Runs right after the reply, not awaited (publish while the gateway replays). */
  afterReply?: () => Promise<void>
  /** Adjusts the answered last_seq (a stale answer). */
  adjust?: (seq: number) => number
  opens: number
}
const owners = new Map<string, Owner>()
const wrongSubjects: string[] = []
t.teardown(() => {
  if (wrongSubjects.length) throw new Error(`stream.open asked on the wrong subjects: ${wrongSubjects.join(', ')}`)
})

async function lastSeqOf(sid: string): Promise<number> {
  try {
    const m = await jsm.streams.getMessage(EVENTS_STREAM, { last_by_subj: eventsSubject(sid) })
    return m?.seq ?? 0
  } catch {
    return 0
  }
}

nc.subscribe('troupe.session.*.*.stream.open', {
  callback: (_err, msg: Msg) => {
    void (async () => {
      const req = decode<ActorRequest>(msg.data)
      const sid = req.params.session_id!
      if (msg.subject !== partitionedSubject('session', sid, 'stream.open')) wrongSubjects.push(msg.subject)
      const o = owners.get(sid)
      let reply: ActorReply
      if (!o?.known) {
        reply = { ok: false, error: { status: 404, type: 'not_found_error', message: `session ${sid} not found` } }
      } else {
        o.opens++
        await o.beforeReply?.()
        const seq = await lastSeqOf(sid)
        reply = { ok: true, body: { last_seq: o.adjust ? o.adjust(seq) : seq } }
      }
      msg.respond(encode(reply))
      if (o?.known && o.afterReply) void o.afterReply()
    })()
  },
})

function session(owner: Partial<Owner> = {}): string {
  const sid = newId('sesn')
  owners.set(sid, { known: true, opens: 0, ...owner })
  return sid
}

// ---- what the session actor writes ------------------------------------------------------------------------

interface Ev {
  id: string
  type: string
  processed_at: string | null
  [k: string]: unknown
}

async function store(sid: string, type = 'agent.message', extra: Record<string, unknown> = {}): Promise<Ev> {
  const ev: Ev = { type, id: newId('sevt'), processed_at: new Date().toISOString(), ...extra }
  const h = natsHeaders()
  h.set(EventHeaders.msgId, ev.id)
  h.set(EventHeaders.type, type)
  h.set(EventHeaders.id, ev.id)
  await js.publish(eventsSubject(sid), JSON.stringify(ev), { headers: h })
  return ev
}

async function storeMany(sid: string, n: number, label: string): Promise<Ev[]> {
  const out: Ev[] = []
  for (let i = 0; i < n; i++) out.push(await store(sid, 'agent.message', { content: [{ type: 'text', text: `${label} ${i}` }] }))
  return out
}

/** An internal record: shares the subject, never shown. */
async function storeProcessed(sid: string, ids: string[]): Promise<void> {
  const h = natsHeaders()
  h.set(EventHeaders.msgId, newId('sevt'))
  h.set(EventHeaders.type, '_processed')
  await js.publish(eventsSubject(sid), JSON.stringify({ type: '_processed', ids, processed_at: new Date().toISOString() }), { headers: h })
}

function preview(sid: string, payload: Record<string, unknown>, deltaOf: string): void {
  const h = natsHeaders()
  h.set(EventHeaders.type, String(payload.type))
  h.set(EventHeaders.deltaOf, deltaOf)
  nc.publish(liveSubject(sid), JSON.stringify(payload), { headers: h })
}

function deletionNotice(sid: string, withIdHeader = true): Ev {
  const ev: Ev = { type: 'session.deleted', id: newId('sevt'), processed_at: new Date().toISOString() }
  const h = natsHeaders()
  h.set(EventHeaders.type, ev.type)
  if (withIdHeader) h.set(EventHeaders.id, ev.id)
  nc.publish(liveSubject(sid), JSON.stringify(ev), { headers: h })
  return ev
}

// ---- an SSE reader ----------------------------------------------------------------------------------------

interface SseMsg {
  event: string | undefined
  id: string | undefined
  data: string
  /** The raw lines of the message, to check framing. */
  raw: string
}

function sseReader(res: Response) {
  const reader = res.body!.getReader()
  const dec = new TextDecoder()
  let buf = ''
  let ended = false
  const messages: SseMsg[] = []
  const comments: string[] = []
  const parse = () => {
    let i: number
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, i)
      buf = buf.slice(i + 2)
      const m: SseMsg = { event: undefined, id: undefined, data: '', raw: block }
      let isComment = true
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) continue
        isComment = false
        const c = line.indexOf(':')
        const field = line.slice(0, c)
        const value = line.slice(c + 1).replace(/^ /, '')
        if (field === 'event') m.event = value
        else if (field === 'id') m.id = value
        else if (field === 'data') m.data = m.data ? `${m.data}\n${value}` : value
      }
      if (isComment) comments.push(block)
      else messages.push(m)
    }
  }
  const pull = async (what: string) => {
    const { done, value } = await guard(reader.read(), what)
    if (done) ended = true
    else {
      buf += dec.decode(value, { stream: true })
      parse()
    }
  }
  return {
    messages,
    comments,
    get ended() {
      return ended
    },
    /** Waits until `n` messages arrived in total. */
    async untilComment(text: string): Promise<void> {
      while (!comments.includes(text)) {
        if (ended) throw new Error(`stream ended before the comment ${text}`)
        await pull(`comment ${text}`)
      }
    },
    async take(n: number): Promise<SseMsg[]> {
      while (messages.length < n) {
        if (ended) throw new Error(`stream ended after ${messages.length} of ${n} messages`)
        await pull(`${n} messages (have ${messages.length})`)
      }
      return messages.slice(0, n)
    },
    async toEnd(): Promise<SseMsg[]> {
      while (!ended) await pull('end of stream')
      return messages
    },
    cancel: () => reader.cancel().catch(() => undefined),
  }
}

async function openStream(sid: string, query = '', hdrs: Record<string, string> = {}) {
  const res = await guard(
    fetch(`${base}/v1/sessions/${sid}/events/stream${query ? `?${query}` : ''}`, {
      headers: { accept: 'application/json', ...hdrs },
    }),
    'stream headers',
  )
  return { res, sse: sseReader(res) }
}

/** Until `pred` holds (polling a gateway counter: nothing to await on). */

const ids = (ms: SseMsg[]) => ms.map((m) => m.id)

// ---- tests ------------------------------------------------------------------------------------------------

t.test('formatSseRaw writes stored JSON as is', async (t) => {
  t.equal(formatSseRaw('agent.message', '{"a":1}', 'sevt_1'), 'event: agent.message\nid: sevt_1\ndata: {"a":1}\n\n')
  t.equal(formatSseRaw('event_delta', '{}'), 'event: event_delta\ndata: {}\n\n', 'no id line without an id')
  t.equal(formatSseRaw('x', '{\n"a":\r\n1}'), 'event: x\ndata: {\ndata: "a":\ndata: 1}\n\n', 'a line break in the JSON splits data lines')
})

t.test('RePublish feeds the live subject on this nats-server', async (t) => {
  const sid = newId('sesn')
  const sub = nc.subscribe(`troupe.live.${sid}.>`, { max: 1 })
  await nc.flush()
  const ev = await store(sid)
  for await (const m of sub) {
    t.equal(m.subject, liveSubject(sid))
    t.equal(m.headers?.get(EventHeaders.type), 'agent.message')
    t.equal(m.headers?.get(EventHeaders.id), ev.id)
    t.match(m.headers?.get(EventHeaders.sequence), /^\d+$/)
    t.equal(m.string(), JSON.stringify(ev))
  }
})

t.test('live: stored events in order, framed with event and id, payload as stored; history before the open is not replayed', async (t) => {
  const sid = session()
  const before = await storeMany(sid, 3, 'before')
  const { res, sse } = await openStream(sid)
  t.equal(res.status, 200)
  t.equal(res.headers.get('content-type'), 'text/event-stream')
  t.match(res.headers.get('request-id'), /^req_/)
  const evs = [
    await store(sid, 'session.status_running'),
    ...(await storeMany(sid, 20, 'live')),
    await store(sid, 'session.status_idle', { stop_reason: { type: 'end_turn' } }),
  ]
  const got = await sse.take(evs.length)
  t.same(
    ids(got),
    evs.map((e) => e.id),
  )
  t.same(
    got.map((m) => m.event),
    evs.map((e) => e.type),
  )
  t.same(
    got.map((m) => m.data),
    evs.map((e) => JSON.stringify(e)),
  )
  t.equal(got[0]!.raw, `event: session.status_running\nid: ${evs[0]!.id}\ndata: ${JSON.stringify(evs[0])}`)
  t.notOk(got.some((m) => before.some((b) => b.id === m.id)))
  await sse.cancel()
  await until('the stream to be cleaned up after the client left', () => gw.openStreams === 0, 10_000, 10)
})

t.test('?after= replays what followed, then goes live: no gap, no duplicate, even with writes during the open and the replay', async (t) => {
  const written: Ev[] = []
  let background: Promise<void> = Promise.resolve()
  const sid = session({
    // Stored after the gateway subscribed but before last_seq is read: must come through the replay.
    beforeReply: async () => {
      written.push(...(await storeMany(sid, 10, 'opening')))
    },
    // Stored while the gateway replays: must come through the live buffer, once.
    afterReply: async () => {
      background = (async () => {
        for (let i = 0; i < 60; i++) {
          written.push(await store(sid, 'agent.message', { content: [{ type: 'text', text: `during ${i}` }] }))
          if (i % 7 === 0) await storeProcessed(sid, [written[0]!.id])
        }
      })()
    },
  })
  const history = await storeMany(sid, 150, 'history')
  await storeProcessed(sid, [history[0]!.id])
  written.push(...history)
  const from = history[40]!
  const { res, sse } = await openStream(sid, `after=${from.id}`)
  t.equal(res.status, 200)
  await background
  const tail = [...(await storeMany(sid, 5, 'after'))]
  written.push(...tail)
  // Order of storage is the order of `written` except the opening batch, written during the open: sort by seq.
  const expected = await storedIdsAfter(sid, from.id)
  t.equal(expected.length, 109 + 10 + 60 + 5)
  const got = await sse.take(expected.length)
  t.same(ids(got), expected, 'every stored event after the cursor, in stream order, once')
  t.notOk(
    got.some((m) => m.event?.startsWith('_')),
    'no internal records',
  )
  t.equal(new Set(ids(got)).size, got.length, 'no duplicates')
  // Nothing more arrives: a fresh event is the very next message.
  const next = await store(sid)
  t.equal((await sse.take(expected.length + 1)).at(-1)!.id, next.id)
  await sse.cancel()
})

/** The ids of the session's stored, non-internal events after `after`, in stream order (read independently). */
async function storedIdsAfter(sid: string, after: string): Promise<string[]> {
  const c = await js.consumers.get(EVENTS_STREAM, { filter_subjects: eventsWildcard(sid) })
  const out: string[] = []
  let seen = false
  const info = await c.info(true)
  let left = info.num_pending
  const iter = await c.fetch({ max_messages: left })
  for await (const m of iter) {
    const id = m.headers?.get(EventHeaders.id)
    const type = m.headers?.get(EventHeaders.type) ?? ''
    if (seen && id && !type.startsWith('_')) out.push(id)
    if (id === after) seen = true
    if (--left === 0) break
  }
  await c.delete().catch(() => undefined)
  return out
}

t.test('Last-Event-ID header replays too; ?after= wins over it', async (t) => {
  const sid = session()
  const evs = await storeMany(sid, 6, 'x')
  const a = await openStream(sid, '', { 'last-event-id': evs[2]!.id })
  t.same(
    ids(await a.sse.take(3)),
    evs.slice(3).map((e) => e.id),
  )
  await a.sse.cancel()
  const b = await openStream(sid, `after=${evs[4]!.id}`, { 'last-event-id': 'sevt_bogus' })
  t.equal(b.res.status, 200)
  t.same(ids(await b.sse.take(1)), [evs[5]!.id])
  // The last event: nothing to replay, straight to live.
  const c = await openStream(sid, `after=${evs[5]!.id}`)
  const fresh = await store(sid)
  t.same(ids(await c.sse.take(1)), [fresh.id])
  t.same(ids(await b.sse.take(2)), [evs[5]!.id, fresh.id])
  await b.sse.cancel()
  await c.sse.cancel()
})

t.test('an id whose mint time is after its storage time (a host clock running ahead): found by the full read', async (t) => {
  /** Stores an event whose id claims to be minted `aheadMs` from now. */
  const storeSkewed = async (sid: string, aheadMs: number) => {
    const id = `sevt_${encodeTime(Date.now() + aheadMs, 10)}${'0'.repeat(16)}`
    const h = natsHeaders()
    h.set(EventHeaders.msgId, id)
    h.set(EventHeaders.type, 'agent.tool_result')
    h.set(EventHeaders.id, id)
    await js.publish(eventsSubject(sid), JSON.stringify({ type: 'agent.tool_result', id, processed_at: null }), { headers: h })
    return id
  }
  // Nothing stored after the time the id claims: the time-based read is empty, the read from the start finds it.
  const sid = session()
  await store(sid)
  const ahead = await storeSkewed(sid, 60_000)
  const after = await storeMany(sid, 2, 'y')
  const a = await openStream(sid, `after=${ahead}`)
  t.same(
    ids(await a.sse.take(2)),
    after.map((e) => e.id),
  )
  await a.sse.cancel()

  // The time-based read sees later events but not this one: the read from the start stops where it began.
  const sid2 = session()
  await store(sid2)
  const ahead2 = await storeSkewed(sid2, ID_SLACK_MS + 1000)
  const mid = await store(sid2)
  await new Promise((r) => setTimeout(r, 1100))
  const late = await storeMany(sid2, 2, 'late')
  const b = await openStream(sid2, `after=${ahead2}`)
  t.same(
    ids(await b.sse.take(3)),
    [mid, ...late].map((e) => e.id),
  )
  await b.sse.cancel()
})

t.test('an unknown after or Last-Event-ID is a 400 JSON envelope, before any SSE', async (t) => {
  const sid = session()
  const other = session()
  const foreign = await store(other)
  await store(sid)
  for (const [query, hdrs, name] of [
    [`after=${newId('sevt')}`, {}, 'after'],
    [`after=${foreign.id}`, {}, 'after'],
    ['after=garbage', {}, 'after'],
    ['', { 'last-event-id': newId('sevt') }, 'Last-Event-ID'],
  ] as const) {
    const r = await fetch(`${base}/v1/sessions/${sid}/events/stream?${query}`, { headers: hdrs })
    t.equal(r.status, 400, `${query} ${JSON.stringify(hdrs)}`)
    t.equal(r.headers.get('content-type'), 'application/json')
    const body = await r.json()
    t.equal(body.type, 'error')
    t.equal(body.error.type, 'invalid_request_error')
    t.match(body.error.message, name)
    t.equal(body.request_id, r.headers.get('request-id'))
  }
  const empty = session()
  const r = await fetch(`${base}/v1/sessions/${empty}/events/stream?after=${foreign.id}`)
  t.equal(r.status, 400, 'a session without events has no event to resume after')
  await r.body?.cancel()
  await until('refused streams to be cleaned up', () => gw.openStreams === 0, 10_000, 10)
})

t.test('bad query values are 400s from the route schema', async (t) => {
  const sid = session()
  const r = await fetch(`${base}/v1/sessions/${sid}/events/stream?event_deltas[]=agent.tool_use`)
  t.equal(r.status, 400)
  const body = await r.json()
  t.match(body.error.message, /event_deltas/)
  t.equal(owners.get(sid)!.opens, 0, 'the owner was not asked')
})

t.test('unknown session: 404 JSON from stream.open, no SSE', async (t) => {
  const sid = newId('sesn')
  const r = await fetch(`${base}/v1/sessions/${sid}/events/stream`, { headers: { accept: 'text/event-stream' } })
  t.equal(r.status, 404)
  t.equal(r.headers.get('content-type'), 'application/json')
  const body = await r.json()
  t.equal(body.error.type, 'not_found_error')
  await until('the subscription to be dropped', () => gw.openStreams === 0, 10_000, 10)
})

t.test('event_deltas: previews only when asked, never with an id; deltas only after their start', async (t) => {
  const sid = session()
  const plain = await openStream(sid)
  const msgs = await openStream(sid, 'event_deltas=agent.message')
  const both = await openStream(sid, 'event_deltas[]=agent.message&event_deltas[]=agent.thinking')
  const msgId = newId('sevt')
  const thinkId = newId('sevt')
  // A delta of a preview whose start this stream never saw (joined mid-message): not forwarded.
  preview(
    sid,
    { type: 'event_delta', event_id: newId('sevt'), delta: { type: 'content_delta', content: { type: 'text', text: 'orphan' }, index: 0 } },
    'agent.message',
  )
  preview(sid, { type: 'event_start', event: { type: 'agent.thinking', id: thinkId } }, 'agent.thinking')
  const thinking = await store(sid, 'agent.thinking')
  preview(sid, { type: 'event_start', event: { type: 'agent.message', id: msgId } }, 'agent.message')
  preview(sid, { type: 'event_delta', event_id: msgId, delta: { type: 'content_delta', content: { type: 'text', text: 'Hel' }, index: 0 } }, 'agent.message')
  preview(sid, { type: 'event_delta', event_id: msgId, delta: { type: 'content_delta', content: { type: 'text', text: 'lo' }, index: 0 } }, 'agent.message')
  await nc.flush()
  const final: Ev = { type: 'agent.message', id: msgId, processed_at: new Date().toISOString(), content: [{ type: 'text', text: 'Hello' }] }
  const h = natsHeaders()
  h.set(EventHeaders.msgId, msgId)
  h.set(EventHeaders.type, 'agent.message')
  h.set(EventHeaders.id, msgId)
  await js.publish(eventsSubject(sid), JSON.stringify(final), { headers: h })

  const p = await plain.sse.take(2)
  t.same(
    p.map((m) => [m.event, m.id]),
    [
      ['agent.thinking', thinking.id],
      ['agent.message', msgId],
    ],
  )
  const m = await msgs.sse.take(5)
  t.same(
    m.map((x) => [x.event, x.id]),
    [
      ['agent.thinking', thinking.id],
      ['event_start', undefined],
      ['event_delta', undefined],
      ['event_delta', undefined],
      ['agent.message', msgId],
    ],
  )
  t.notOk(m[1]!.raw.includes('\nid:'), 'no id line on a preview')
  t.same(JSON.parse(m[2]!.data).delta.content.text, 'Hel')
  const b = await both.sse.take(6)
  t.same(
    b.map((x) => x.event),
    ['event_start', 'agent.thinking', 'event_start', 'event_delta', 'event_delta', 'agent.message'],
  )
  t.same(JSON.parse(b[0]!.data), { type: 'event_start', event: { type: 'agent.thinking', id: thinkId } })
  for (const s of [plain, msgs, both]) await s.sse.cancel()
})

t.test('internal records are never sent, live or replayed', async (t) => {
  const sid = session()
  const first = await store(sid, 'user.message', { content: [{ type: 'text', text: 'hi' }] })
  await storeProcessed(sid, [first.id])
  const second = await store(sid)
  const live = await openStream(sid)
  await storeProcessed(sid, [second.id])
  const third = await store(sid)
  t.same(ids(await live.sse.take(1)), [third.id])
  const replay = await openStream(sid, `after=${first.id}`)
  t.same(ids(await replay.sse.take(2)), [second.id, third.id])
  for (const s of [live, replay]) await s.sse.cancel()
  t.notOk([...live.sse.messages, ...replay.sse.messages].some((m) => m.event === '_processed' || m.data.includes('_processed')))
})

t.test('deletion notice: sent as a message, then the stream ends and is cleaned up', async (t) => {
  const sid = session()
  const a = await openStream(sid)
  const b = await openStream(sid, 'event_deltas[]=agent.message')
  const ev = await store(sid)
  // The id line comes from the payload when the notice carries no Troupe-Event-Id header.
  const notice = deletionNotice(sid, false)
  for (const s of [a, b]) {
    const all = await s.sse.toEnd()
    t.same(
      all.map((m) => [m.event, m.id]),
      [
        ['agent.message', ev.id],
        ['session.deleted', notice.id],
      ],
    )
    t.same(JSON.parse(all[1]!.data), notice)
  }
  await until('streams to be gone', () => gw.openStreams === 0, 10_000, 10)
})

t.test('a deletion notice while the stream opens: no replay, the notice, the end', async (t) => {
  let notice: Ev | undefined
  const sid = session({
    // The gateway has subscribed by now; the history may be going away, so it is not read.
    beforeReply: async () => {
      notice = deletionNotice(sid)
      await nc.flush()
    },
  })
  const evs = await storeMany(sid, 5, 'h')
  const s = await openStream(sid, `after=${evs[0]!.id}`)
  const all = await s.sse.toEnd()
  t.same(
    all.map((m) => [m.event, m.id]),
    [['session.deleted', notice!.id]],
  )
  await until('the stream to be gone', () => gw.openStreams === 0, 10_000, 10)
})

t.test('a stale last_seq from the owner: the missed event is read back when the next one reveals the gap', async (t) => {
  const sid = session({ adjust: (seq) => seq - 1 })
  await storeMany(sid, 3, 'old')
  const missed = await store(sid)
  const s = await openStream(sid)
  const next = await store(sid)
  t.same(ids(await s.sse.take(2)), [missed.id, next.id])
  await s.sse.cancel()
})

t.test('keepalive comments, and closing the gateway ends open streams', async (t) => {
  const gw2: Gateway = await startGateway({ nc, actors: actorAccess(nc), log, port: 0, transport: TRANSPORT, sseKeepaliveMs: 20 })
  const sid = session()
  const res = await fetch(`http://127.0.0.1:${gw2.port}/v1/sessions/${sid}/events/stream`)
  const sse = sseReader(res)
  const ev = await store(sid)
  await sse.take(1)
  t.equal(sse.messages[0]!.id, ev.id)
  await sse.untilComment(': keepalive')
  t.equal(gw2.openStreams, 1)
  gw2.close()
  await sse.toEnd()
  t.equal(gw2.openStreams, 0)
})

t.test('the official client iterates the stream', async (t) => {
  const sid = session()
  const client = new Anthropic({ baseURL: base, apiKey: 'x', maxRetries: 0 })
  const stream = await client.beta.sessions.events.stream(sid, { event_deltas: ['agent.message'] })
  const msgId = newId('sevt')
  const evs = [await store(sid, 'session.status_running')]
  preview(sid, { type: 'event_start', event: { type: 'agent.message', id: msgId } }, 'agent.message')
  preview(sid, { type: 'event_delta', event_id: msgId, delta: { type: 'content_delta', content: { type: 'text', text: 'Hi' }, index: 0 } }, 'agent.message')
  evs.push(await store(sid, 'session.status_idle', { stop_reason: { type: 'end_turn' }, stop_details: null }))
  const seen: unknown[] = []
  for await (const ev of stream) {
    seen.push(ev)
    if ((ev as { type: string }).type === 'session.status_idle') break
  }
  t.same(
    seen.map((e) => (e as { type: string }).type),
    ['session.status_running', 'event_start', 'event_delta', 'session.status_idle'],
  )
  t.same(seen[0], evs[0])
  await until('the stream to close when the client stopped iterating', () => gw.openStreams === 0, 10_000, 10)

  // Unknown session: the client throws NotFoundError.
  await t.rejects(client.beta.sessions.events.stream(newId('sesn')), Anthropic.NotFoundError)
})

t.test('streams of one session share one live subscription: each gets every event once, in order; the last to leave unsubscribes', async (t) => {
  await until('earlier streams to be gone', () => gw.openStreams === 0, 10_000, 10)
  t.equal(gw.liveSubscriptions, 0, 'no subscription without a stream')
  const sid = session()
  const history = await storeMany(sid, 3, 'history')
  const other = session()
  // Opened together: the later ones join while the first one's subscribe-and-flush may still be under way.
  const [a, b, c, deltas, replay] = await Promise.all([
    openStream(sid),
    openStream(sid),
    openStream(sid),
    openStream(sid, 'event_deltas=agent.message'),
    openStream(sid, `after=${history[0]!.id}`),
  ])
  const elsewhere = await openStream(other)
  t.equal(gw.liveSubscriptions, 2, 'one subscription per session, not per stream')

  const msgId = newId('sevt')
  const live = [...(await storeMany(sid, 10, 'live')), await store(sid, 'session.status_running')]
  preview(sid, { type: 'event_start', event: { type: 'agent.message', id: msgId } }, 'agent.message')
  await storeProcessed(sid, [live[0]!.id])
  live.push(...(await storeMany(sid, 10, 'more')))
  const liveIds = live.map((e) => e.id)
  for (const s of [a, b, c]) t.same(ids(await s.sse.take(liveIds.length)), liveIds, 'every live event once, in order')
  t.same(
    ids(await replay.sse.take(2 + liveIds.length)),
    [...history.slice(1), ...live].map((e) => e.id),
    'replay, then the same live events',
  )
  const withPreview = await deltas.sse.take(liveIds.length + 1)
  t.same(
    withPreview.map((m) => m.event),
    [...live.slice(0, 11).map((e) => e.type), 'event_start', ...live.slice(11).map((e) => e.type)],
  )
  t.same(
    a.sse.messages.map((m) => m.raw),
    withPreview.filter((m) => m.event !== 'event_start').map((m) => m.raw),
    'the same frames on every stream',
  )

  // A stream joining mid-message gets no delta of it; the one that saw its start does.
  const late = await openStream(sid, 'event_deltas=agent.message')
  t.equal(gw.liveSubscriptions, 2, 'a late stream joins the existing subscription')
  preview(sid, { type: 'event_delta', event_id: msgId, delta: { type: 'content_delta', content: { type: 'text', text: 'Hi' }, index: 0 } }, 'agent.message')
  const h = natsHeaders()
  h.set(EventHeaders.msgId, msgId)
  h.set(EventHeaders.type, 'agent.message')
  h.set(EventHeaders.id, msgId)
  await js.publish(eventsSubject(sid), JSON.stringify({ type: 'agent.message', id: msgId, processed_at: null, content: [{ type: 'text', text: 'Hi' }] }), {
    headers: h,
  })
  t.same(
    (await late.sse.take(1)).map((m) => [m.event, m.id]),
    [['agent.message', msgId]],
  )
  t.same(
    (await deltas.sse.take(liveIds.length + 3)).slice(-2).map((m) => [m.event, m.id]),
    [
      ['event_delta', undefined],
      ['agent.message', msgId],
    ],
  )
  for (const [s, n] of [
    [a, 1],
    [b, 1],
    [c, 1],
    [replay, 3],
  ] as const) {
    t.same((await s.sse.take(liveIds.length + n)).at(-1)!.id, msgId, 'the final message reached every stream')
  }
  for (const s of [a, b, c, deltas, replay, late])
    t.equal(new Set(ids(s.sse.messages.filter((m) => m.id))).size, s.sse.messages.filter((m) => m.id).length, 'no duplicates')

  // Leaving one by one: the subscription stays until the last stream of the session is gone.
  for (const s of [a, b, c, deltas, replay]) await s.sse.cancel()
  await until('five streams to be gone', () => gw.openStreams === 2, 10_000, 10)
  t.equal(gw.liveSubscriptions, 2, 'still subscribed for the stream left on each session')
  const after = await store(sid)
  t.same((await late.sse.take(2)).at(-1)!.id, after.id, 'the remaining stream is still fed')
  await late.sse.cancel()
  await elsewhere.sse.cancel()
  await until('every stream to be gone', () => gw.openStreams === 0, 10_000, 10)
  t.equal(gw.liveSubscriptions, 0, 'the last stream of a session unsubscribes')

  // And a new stream subscribes afresh.
  const again = await openStream(sid)
  t.equal(gw.liveSubscriptions, 1)
  const next = await store(sid)
  t.same(ids(await again.sse.take(1)), [next.id])
  await again.sse.cancel()
  await until('the stream and its subscription to be gone', () => gw.openStreams === 0 && gw.liveSubscriptions === 0, 10_000, 10)
})
