import t from 'tap'
import { connect } from '@nats-io/transport-node'
import '../helpers/keepalive.js'
import { actorWire, type Failovers } from '../../actors/kit/wire.js'
import { decode, encode } from '../../protocol/codec.js'
import type { ActorReply, ActorRequest } from '../../protocol/envelope.js'
import { isApiError } from '../../protocol/errors/api-error.js'
import { startNats } from '../helpers/nats.js'

// A request in flight to a partition's holder that will not answer (stopped, or dead with its answer lost) is sent
// again when the partition changes holder, if sending it again is safe; one that could store something twice waits
// for its own answer. No test here waits on a clock: the move is triggered by hand.

const nats = await startNats()
const nc = await connect({ servers: nats.url })
t.teardown(async () => {
  await nc.close()
  await nats.stop()
})

const SUBJECT = 'troupe.session.p03.sesn_1.get'
const req: ActorRequest = { op: 'get', rid: 'req_1', params: {}, query: {}, body: undefined }

/** Failovers whose moves and looks the test drives. */
function moves() {
  const waiting = new Set<() => void>()
  const unanswered: string[] = []
  const f: Failovers = {
    unanswered: (s) => void unanswered.push(s),
    moved: (subject, then) => {
      if (subject !== SUBJECT) return undefined
      waiting.add(then)
      return () => waiting.delete(then)
    },
  }
  return {
    f,
    unanswered,
    waiting,
    move() {
      const all = [...waiting]
      waiting.clear()
      for (const then of all) then()
    },
  }
}

/** A holder that takes requests and answers only when told (a SIGSTOPped process, as the caller sees it). */
function silentHolder() {
  const held: Array<{ respond(data: Uint8Array): boolean; data: Uint8Array }> = []
  const sub = nc.subscribe('troupe.session.p03.>', { callback: (_e, m) => void held.push(m) })
  return { held, sub }
}

/** A holder that answers at once. */
function answeringHolder(body: unknown) {
  const got: ActorRequest[] = []
  const sub = nc.subscribe('troupe.session.p03.>', {
    callback: (_e, m) => {
      got.push(decode<ActorRequest>(m.data))
      m.respond(encode({ ok: true, body } satisfies ActorReply))
    },
  })
  return { got, sub }
}

const until = async (what: string, ok: () => boolean) => {
  for (let i = 0; i < 500 && !ok(); i++) await new Promise((r) => setTimeout(r, 10))
  if (!ok()) throw new Error(`never: ${what}`)
}

t.test('a safe request in flight to a silent holder is sent again to the new holder when the partition moves', async (t) => {
  const m = moves()
  const wire = actorWire(nc, m.f)
  const old = silentHolder()
  const answer = wire.ask(SUBJECT, req, 60_000)
  await until('the old holder has the request', () => old.held.length === 1)
  // The takeover: the old holder's subscription stays (a stopped process keeps its connection), a new one answers.
  const next = answeringHolder('from the new holder')
  m.move()
  t.equal(await answer, 'from the new holder', 'answered by the new holder, not left to the 60 s timeout')
  t.equal(next.got.length, 1)
  t.equal(m.waiting.size, 0, 'nothing left listening for moves')
  old.sub.unsubscribe()
  next.sub.unsubscribe()
})

t.test('a request that could store something twice is not sent again: it waits for its own answer', async (t) => {
  const m = moves()
  const wire = actorWire(nc, m.f)
  const old = silentHolder()
  const answer = wire.ask(SUBJECT, req, 60_000, true)
  await until('the old holder has the request', () => old.held.length === 1)
  const next = answeringHolder('from the new holder')
  m.move()
  await new Promise((r) => setTimeout(r, 100))
  t.equal(next.got.length, 0, 'the new holder never saw it')
  // The old holder, resumed, answers what it did (here: it had stored it).
  old.held[0]!.respond(encode({ ok: true, body: 'stored once' } satisfies ActorReply))
  t.equal(await answer, 'stored once')
  old.sub.unsubscribe()
  next.sub.unsubscribe()
})

t.test('a request that found nobody subscribed says so (the holder is looked at), then waits for a subscriber', async (t) => {
  const m = moves()
  const wire = actorWire(nc, m.f)
  const answer = wire.ask(SUBJECT, req, 60_000)
  await until('the wire reported the unanswered subject', () => m.unanswered.length > 0)
  t.equal(m.unanswered[0], SUBJECT)
  const next = answeringHolder('served')
  t.equal(await answer, 'served')
  next.sub.unsubscribe()
})

t.test('without a move, a silent holder still ends in the timeout, as before', async (t) => {
  const m = moves()
  const wire = actorWire(nc, m.f)
  const old = silentHolder()
  const err = await wire.ask(SUBJECT, req, 300).catch((e: unknown) => e)
  t.ok(isApiError(err), 'an API error')
  t.equal((err as { status?: number }).status, 503, 'owner_timeout: a retryable 503')
  t.equal(m.waiting.size, 0, 'nothing left listening for moves')
  old.sub.unsubscribe()
})
