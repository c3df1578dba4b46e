import t from 'tap'
import { localFirst } from '../../actors/kit/wire.js'
import { encode } from '../../protocol/codec.js'
import type { ActorReply, ActorRequest } from '../../protocol/envelope.js'
import { fail } from '../../protocol/errors/fail.js'
import { isApiError } from '../../protocol/errors/api-error.js'
import type { ActorWire } from '../../protocol/wire.js'

const req: ActorRequest = { op: 'get', rid: 'req_1', params: {}, query: {}, body: undefined }
const nc = { info: { max_payload: 1024 } } as never

/** A remote wire that records what went over it. */
function remote() {
  const sent: string[] = []
  const wire: ActorWire = {
    ask: async (subject) => {
      sent.push(subject)
      return 'remote' as never
    },
    askEncoded: async (subject) => {
      sent.push(subject)
      return 'remote' as never
    },
  }
  return { sent, wire }
}

const caught = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e,
  )

t.test('a subject served here runs in-process; any other goes over NATS', async (t) => {
  const r = remote()
  const seen: ActorRequest[] = []
  const wire = localFirst(nc, r.wire, (subject) =>
    subject === 'troupe.x.p01.x_1.get'
      ? async (q) => {
          seen.push(q)
          return { ok: true, body: 'local' }
        }
      : undefined,
  )
  t.equal(await wire.ask('troupe.x.p01.x_1.get', req, 1000), 'local')
  t.equal(await wire.ask('troupe.x.p02.x_2.get', req, 1000), 'remote')
  t.equal(await wire.askEncoded('troupe.x.p01.x_1.get', encode(req), 'req_1', 1000), 'local', 'an encoded request is decoded for the actor')
  t.same(r.sent, ['troupe.x.p02.x_2.get'])
  t.same(seen, [req, req])
})

t.test('a local call answers as a remote one would: errors, an unknown outcome, timeouts, the size limit', async (t) => {
  const r = remote()
  const replies: Record<string, () => Promise<ActorReply>> = {
    refused: async () => ({ ok: false, error: fail('session_not_found', 'sesn_1').toData() }),
    unknown: async () => ({ ok: false, error: { ...fail('store_unavailable').toData(), outcomeUnknown: true } }),
    hangs: () => new Promise(() => undefined),
  }
  const wire = localFirst(nc, r.wire, (subject) => replies[subject])
  const refused = await caught(wire.ask('refused', req, 1000))
  t.ok(isApiError(refused) && refused.status === 404, 'an actor error is thrown as the ApiError it carries')
  const unknown = await caught(wire.ask('unknown', req, 1000, true))
  t.ok(isApiError(unknown) && unknown.status === 504, 'a write with no answer on a create without a key is a 504')
  const late = await caught(wire.ask('hangs', req, 20))
  t.ok(isApiError(late) && late.status === 503, 'no answer in time is the retryable 503 a NATS timeout gives')
  const lateCreate = await caught(wire.ask('hangs', req, 20, true))
  t.ok(isApiError(lateCreate) && lateCreate.status === 504, 'and a 504 where the outcome is unknown')
  const big = await caught(wire.askEncoded('refused', new Uint8Array(2048), 'req_1', 1000))
  t.ok(isApiError(big) && big.status === 413, 'an encoded request over max_payload is a 413 here too')
  t.same(r.sent, [])
})
