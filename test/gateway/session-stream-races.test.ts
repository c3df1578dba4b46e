import t, { type Test as Tap } from 'tap'
import '../helpers/keepalive.js'
import { connect, type Msg } from '@nats-io/transport-node'
import { jetstream, jetstreamManager } from '@nats-io/jetstream'
import { encodeTime } from 'ulid'
import { pino } from 'pino'
import { startGateway } from '../../gateway/server.js'
import { actorAccess } from '../../supervisor/actor-access.js'
import { decode, encode } from '../../protocol/codec.js'
import type { ActorReply, ActorRequest } from '../../protocol/envelope.js'
import { EventHeaders } from '../../protocol/events.js'
import { newId } from '../../protocol/ids.js'
import { EVENTS_STREAM, eventsSubject, eventsWildcard, partitionedSubject } from '../../protocol/subjects.js'
import { startNats } from '../helpers/nats.js'
import { TRANSPORT } from '../helpers/transport.js'
import { ensureEventsStream, EventLog } from '../../actors/session/log/log.js'
import { SessionTails } from '../../actors/session/log/local-tails.js'
import { actorWire } from '../../actors/kit/wire.js'
import type { SessionEvent } from '../../protocol/session-events.js'
import { until } from '../helpers/wait.js'
import { guard, sseReader, type SseMsg } from '../helpers/sse-reader.js'
import { readSessionEvents } from '../../actors/session/log/event-reader.js'
import type { ReadHistory } from '../../protocol/event-item.js'

// The SSE tail's answers to interleavings the real session owner produces only by chance, forced here: events stored
// between the tail's subscribe and the owner's answer and while it replays, an owner whose answer lags a write, a
// deletion during the open, an event id minted by a clock running ahead. The owner is played by a tiny responder
// answering `stream.open` with the session's last stored sequence read from the real stream, as the real owner does;
// everything else is real: nats-server, the events stream as hosts create it, the gateway, and the writes, made through
// the session kind's own EventLog (fenced appends, several events to a message as the actor stores them). The tail
// against the real session actor: session-stream.test.ts. A second gateway is fed in-process, as one beside the
// session's owner is (the session kind's SessionTails, fed by the EventLogs of the sessions "owned here"), and the
// owner moves away under its streams.

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
/** Sessions whose owner is "in the local gateway's process": their event logs feed `tails`. */
const ownedHere = new Set<string>()
let othersMayTail = false
const tails = new SessionTails({ here: (sid) => ownedHere.has(sid), othersMayTail: () => othersMayTail, log })
const local = await startGateway({ nc, actors: actorAccess(nc, actorWire(nc), tails), log, port: 0, transport: TRANSPORT, sseKeepaliveMs: 0 })
/**
 * The next `reads` reads of a third gateway end after sequence `at`, as a read does whose consumer the server put
 * on a replica that is behind (a node back from a partition, catching up): the same records, then nothing more.
 */
const behind = { reads: 0, at: 0 }
const readBehind: ReadHistory = async (sid, from) => {
  const reader = await readSessionEvents(js, sid, from)
  if (behind.reads === 0) return reader
  behind.reads--
  const at = behind.at
  return {
    next: async () => {
      const item = await reader.next()
      return item?.seq !== undefined && item.seq > at ? null : item
    },
    close: () => reader.close(),
  }
}
const lagging = await startGateway({ nc, actors: { ...actorAccess(nc), readHistory: readBehind }, log, port: 0, transport: TRANSPORT, sseKeepaliveMs: 0 })
t.teardown(async () => {
  lagging.close()
  local.close()
  gw.close()
  await nc.close()
  await nats.stop()
})

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

// ---- what the session actor writes, through its own event log ----------------------------------------------

interface Ev {
  id: string
  type: string
  processed_at: string | null
  [k: string]: unknown
}

/** Each session's event log as its actor holds it (appends fenced on the subject's last sequence), one write at a time. */
const logs = new Map<string, { log: Promise<EventLog>; queue: Promise<unknown> }>()
function write<T>(sid: string, fn: (log: EventLog) => Promise<T>): Promise<T> {
  let l = logs.get(sid)
  if (!l)
    logs.set(
      sid,
      (l = { log: lastSeqOf(sid).then((seq) => new EventLog(nc, sid, seq, undefined, ownedHere.has(sid) ? tails : undefined)), queue: Promise.resolve() }),
    )
  const entry = l
  const run = entry.queue.then(async () => fn(await entry.log))
  entry.queue = run.catch(() => undefined)
  return run
}

const event = (type: string, extra: Record<string, unknown> = {}): Ev => ({ type, id: newId('sevt'), processed_at: new Date().toISOString(), ...extra })

async function store(sid: string, type = 'agent.message', extra: Record<string, unknown> = {}): Promise<Ev> {
  const ev = event(type, extra)
  await write(sid, (log) => log.append(ev as SessionEvent, { id: ev.id }))
  return ev
}

/** `n` messages' worth of events, stored as the actor stores events emitted together: up to three in one message. */
async function storeMany(sid: string, n: number, label: string): Promise<Ev[]> {
  const out = Array.from({ length: n }, (_, i) => event('agent.message', { content: [{ type: 'text', text: `${label} ${i}` }] }))
  for (let i = 0; i < out.length; i += 3) {
    const part = out.slice(i, i + 3).map((e) => ({ event: e as SessionEvent, json: JSON.stringify(e) }))
    await write(sid, (log) => log.appendMany(part, []))
  }
  return out
}

/** An internal record: shares the subject, never shown. */
async function storeProcessed(sid: string, ids: string[]): Promise<void> {
  await write(sid, (log) => log.append({ type: '_processed', ids, processed_at: new Date().toISOString() }))
}

/** The deletion notice as the actor sends it: stream-only, its id in the payload. */
function deletionNotice(sid: string): Ev {
  const ev = event('session.deleted')
  new EventLog(nc, sid, 0).notify(ev.type, ev)
  return ev
}

async function openStream(sid: string, query = '', hdrs: Record<string, string> = {}, at = base) {
  const res = await guard(
    fetch(`${at}/v1/sessions/${sid}/events/stream${query ? `?${query}` : ''}`, {
      headers: { accept: 'application/json', ...hdrs },
    }),
    'stream headers',
  )
  return { res, sse: sseReader(res) }
}

const ids = (ms: SseMsg[]) => ms.map((m) => m.id)

// ---- tests ------------------------------------------------------------------------------------------------

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
    // A message may hold several events: its id and type headers list them, comma-separated.
    const ids = (m.headers?.get(EventHeaders.id) ?? '').split(',')
    const types = (m.headers?.get(EventHeaders.type) ?? '').split(',')
    ids.forEach((id, i) => {
      if (seen && id && !(types[i] ?? '').startsWith('_')) out.push(id)
      if (id === after) seen = true
    })
    if (--left === 0) break
  }
  await c.delete().catch(() => undefined)
  return out
}

t.test('an id whose mint time is after its storage time (a host clock running ahead): found by the full read', async (t) => {
  /** Stores an event whose id claims to be minted `aheadMs` from now. */
  const storeSkewed = async (sid: string, aheadMs: number) => {
    const id = `sevt_${encodeTime(Date.now() + aheadMs, 10)}${'0'.repeat(16)}`
    await write(sid, (log) => log.append({ type: 'agent.tool_result', id, processed_at: null } as unknown as SessionEvent, { id }))
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

// ---- reads on a replica behind -----------------------------------------------------------------------------

const laggingBase = `http://127.0.0.1:${lagging.port}`

/** The stream sequence of the message that stores this event. */
async function seqOf(sid: string, id: string): Promise<number> {
  const r = await readSessionEvents(js, sid, 'all')
  try {
    for (let item = await r.next(); item; item = await r.next()) if (item.id === id) return item.seq!
  } finally {
    r.close()
  }
  throw new Error(`${id} is not stored`)
}

t.test('reads ending short on a replica behind: Last-Event-ID is found and all that follows is sent, read again', async (t) => {
  const sid = session()
  const evs = await storeMany(sid, 30, 'h')
  const from = evs[5]!
  // The replica has none of the session's events: the search finds nothing twice (a 400 before it read again).
  behind.at = (await seqOf(sid, evs[0]!.id)) - 1
  behind.reads = 2
  const a = await openStream(sid, '', { 'last-event-id': from.id }, laggingBase)
  t.equal(a.res.status, 200)
  t.same(
    ids(await a.sse.take(24)),
    evs.slice(6).map((e) => e.id),
  )
  await a.sse.cancel()

  // The replica stops partway through the replay, and still when the next event's gap is read back: before, the
  // replay ended there and the gap's read skipped the rest.
  behind.at = await seqOf(sid, evs[20]!.id)
  behind.reads = 3
  const b = await openStream(sid, '', { 'last-event-id': from.id }, laggingBase)
  const next = await store(sid)
  t.same(
    ids(await b.sse.take(25)),
    [...evs.slice(6), next].map((e) => e.id),
    'every event after the one asked for, once, in order',
  )
  await b.sse.cancel()
  t.equal(behind.reads, 0)
})

t.test('reads that keep ending short: a 503 to retry, never a 400; mid-stream, an error event and the end, nothing skipped', async (t) => {
  t.teardown(() => {
    behind.reads = 0
  })
  const sid = session()
  const evs = await storeMany(sid, 12, 'h')
  behind.at = (await seqOf(sid, evs[0]!.id)) - 1
  behind.reads = 1_000
  const res = await guard(fetch(`${laggingBase}/v1/sessions/${sid}/events/stream?after=${evs[3]!.id}`), 'stream headers')
  t.equal(res.status, 503)
  t.ok(res.headers.get('retry-after-ms'), 'with a retry hint')
  t.match((await res.json()).error, { type: 'overloaded_error', message: /read up to 0 of \d+ \(a replica behind\)/ })

  behind.at = await seqOf(sid, evs[8]!.id)
  const s = await openStream(sid, `after=${evs[3]!.id}`, {}, laggingBase)
  const all = await s.sse.toEnd()
  t.same(
    all.map((m) => m.id ?? m.event),
    [...evs.slice(4, 9).map((e) => e.id), 'error'],
  )
  t.match(JSON.parse(all.at(-1)!.data).error, { type: 'overloaded_error', message: /a replica behind/ })
})

// ---- fed in-process ---------------------------------------------------------------------------------------

const localBase = `http://127.0.0.1:${local.port}`

/** Subscriptions to a session's live subject, as nats-server counts them. */
async function liveSubscriptions(sid: string): Promise<number> {
  const connz = await (await fetch(`${nats.monitorUrl}/connz?subs=1&limit=1024`)).json()
  return (connz.connections as Array<{ subscriptions_list?: string[] }>)
    .flatMap((c) => c.subscriptions_list ?? [])
    .filter((x) => x === `troupe.live.${sid}.primary`).length
}

/** A session whose owner runs beside the local gateway (its writes feed that gateway's tails). */
function sessionHere(owner: Partial<Owner> = {}): string {
  const sid = session(owner)
  ownedHere.add(sid)
  return sid
}

/**
 * The owner moves away: its writes stop (in flight ones settle), its tails are told, and a new owner writes from the
 * stream's last sequence, feeding nothing here. `newOwnerFirst`: the new owner stores these before the tails are
 * told (a takeover after a host fell silent, noticed late here).
 */
async function moveAway(sid: string, newOwnerFirst = 0): Promise<Ev[]> {
  await logs.get(sid)?.queue
  ownedHere.delete(sid)
  logs.delete(sid)
  const early = newOwnerFirst ? await storeMany(sid, newOwnerFirst, 'new owner, early') : []
  tails.moved(sid)
  return early
}

/** A session owned "here" with a stream on the local gateway that was fed its first event in-process. */
async function fedOne(t: Tap) {
  const sid = sessionHere()
  const s = await openStream(sid, '', {}, localBase)
  const mine = await store(sid)
  t.equal((await s.sse.take(1))[0]!.id, mine.id, 'fed in-process')
  return { sid, s }
}

t.test('fed in-process: no subscription; every stored event once, in order, framed as over NATS; previews only where asked', async (t) => {
  const sid = sessionHere()
  const before = await storeMany(sid, 4, 'before')
  const plain = await openStream(sid, '', {}, localBase)
  const deltas = await openStream(sid, 'event_deltas[]=agent.message', {}, localBase)
  const overNats = await openStream(sid)
  t.equal(await liveSubscriptions(sid), 1, 'only the gateway without the owner subscribes')
  const start = { type: 'event_start', event: { type: 'agent.message', id: newId('sevt') } }
  await write(sid, async (log) => log.notify('event_start', start, 'agent.message'))
  const written = [...(await storeMany(sid, 7, 'live')), await store(sid)]
  await storeProcessed(sid, [before[0]!.id])
  const last = await store(sid)
  const expected = await storedIdsAfter(sid, before.at(-1)!.id)
  t.same(
    expected,
    [...written, last].map((e) => e.id),
  )
  const got = await plain.sse.take(expected.length)
  t.same(ids(got), expected, 'every stored event after the open, once, in order, no internal record')
  t.same(
    got.map((m) => m.raw),
    (await overNats.sse.take(expected.length)).map((m) => m.raw),
    'the same bytes as a tail over NATS',
  )
  const withDeltas = await deltas.sse.take(expected.length + 1)
  t.same([withDeltas[0]!.event, withDeltas[0]!.id], ['event_start', undefined], 'the preview, without an id, to the tail that asked')
  t.same(ids(withDeltas.slice(1)), expected)
  for (const x of [plain, deltas, overNats]) await x.sse.cancel()
  await until('the local streams to be gone', () => local.openStreams === 0, 10_000, 10)
})

t.test('previews go over NATS only when a tail elsewhere may want them', async (t) => {
  const sid = sessionHere()
  await store(sid)
  const sub = nc.subscribe(`troupe.live.${sid}.>`)
  const seen: string[] = []
  void (async () => {
    for await (const m of sub) seen.push(m.headers?.get(EventHeaders.type) ?? '')
  })()
  await nc.flush()
  const preview = (n: number) => write(sid, async (log) => log.notify('event_delta', { type: 'event_delta', event_id: `e${n}` }, 'agent.message'))
  await preview(1)
  othersMayTail = true
  await preview(2)
  othersMayTail = false
  await store(sid)
  await until('the stored event republished', () => seen.includes('agent.message'), 10_000, 10)
  sub.unsubscribe()
  t.same(seen, ['event_delta', 'agent.message'], 'the preview published while another host lives, not the one before')
})

t.test('the owner moves away mid-stream (a hand-over): the stream goes on over NATS, nothing lost, nothing twice, in order', async (t) => {
  const sid = sessionHere()
  const s = await openStream(sid, '', {}, localBase)
  const first = await storeMany(sid, 9, 'here')
  t.same(
    ids(await s.sse.take(9)),
    first.map((e) => e.id),
    'fed in-process first',
  )
  await storeMany(sid, 5, 'here, just before the move')
  await moveAway(sid)
  // The new owner writes at once, while the tail subscribes and reads back.
  const after = await storeMany(sid, 20, 'new owner')
  const expected = await storedIdsAfter(sid, first.at(-1)!.id)
  t.equal(expected.length, 25)
  const got = await s.sse.take(9 + expected.length)
  t.same(ids(got.slice(9)), expected, 'every later event once, in stream order')
  t.same(
    ids(got.slice(-20)),
    after.map((e) => e.id),
  )
  t.equal(await liveSubscriptions(sid), 1, 'listening over NATS now')
  await s.sse.cancel()
})

t.test('a takeover noticed late: what the new owner stored before the tail was told is read back, even with nothing after it', async (t) => {
  const { sid, s } = await fedOne(t)
  const early = await moveAway(sid, 4)
  t.same(
    ids(await s.sse.take(5)).slice(1),
    early.map((e) => e.id),
    "the new owner's events, read back",
  )
  const next = await store(sid)
  t.equal((await s.sse.take(6)).at(-1)!.id, next.id, 'then live over NATS')
  await s.sse.cancel()
})

t.test('an append fenced off by another writer sends the tails over to NATS', async (t) => {
  const { sid, s } = await fedOne(t)
  // Another owner writes behind this one's back; this owner's next append finds the subject moved on.
  const stale = await logs.get(sid)!.log
  const other = new EventLog(nc, sid, stale.lastSeq)
  const theirs = event('agent.message')
  await other.append(theirs as SessionEvent, { id: theirs.id })
  await t.rejects(stale.append(event('agent.message') as SessionEvent), { message: /moved on without us/ })
  t.equal((await s.sse.take(2))[1]!.id, theirs.id, 'their event, read back from the stream')
  ownedHere.delete(sid)
  logs.delete(sid)
  const next = await store(sid)
  t.equal((await s.sse.take(3))[2]!.id, next.id, 'then live over NATS')
  await s.sse.cancel()
})

t.test('the deletion notice fed in-process ends the stream', async (t) => {
  const sid = sessionHere()
  const s = await openStream(sid, '', {}, localBase)
  await store(sid)
  const ev = event('session.deleted')
  await write(sid, async (log) => log.notify(ev.type, ev))
  const all = await s.sse.toEnd()
  t.same(
    all.map((m) => [m.event, m.id]),
    [
      ['agent.message', all[0]!.id],
      ['session.deleted', ev.id],
    ],
  )
  await until('the stream to be gone', () => local.openStreams === 0, 10_000, 10)
})
