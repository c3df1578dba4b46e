import t from 'tap'
import { type } from 'arktype'
import { actorClient } from '../../actors/kit/client.js'
import { dispatch, implement } from '../../actors/kit/ops.js'
import { isApiError } from '../../protocol/errors/api-error.js'
import { defineKind, returns } from '../../protocol/ops/define.js'
import type { ActorWire } from '../../protocol/wire.js'

const Echo = defineKind(
  'echo',
  { param: 'echo_id', prefix: 'echo', noun: 'Echo' },
  {
    list: { placement: 'any', query: type({ 'limit?': 'number' }), reply: returns<{ id: string; limit?: number }>() },
    poke: { placement: 'owner', body: type({ n: 'number' }), reply: returns<{ id: string; n: number; rid: string }>() },
    /** Names a part of the echo beside it: a second path id. */
    'part.get': { placement: 'owner', sub: { param: 'part_id', prefix: 'part', noun: 'Part' }, reply: returns<{ id: string; sub: string }>() },
    partFind: { placement: 'any', sub: { param: 'part_id', prefix: 'part', noun: 'Part' }, reply: returns<{ id: string; sub: string }>() },
  },
)
const table = implement(Echo, {
  list: async ({ id, query }) => ({ id, ...query }),
  poke: async ({ id, body, rid }) => ({ id, n: body.n, rid }),
  'part.get': async ({ id, sub }) => ({ id, sub }),
  partFind: async ({ id, sub }) => ({ id, sub }),
})
const req = (op: string, extra: Record<string, unknown> = {}) => ({ op, rid: 'req_1', params: {}, query: {}, body: undefined, ...extra })

t.test('ops run where their contract places them, with the id the placement names', async (t) => {
  t.same(await dispatch(table, req('list', { params: { echo_id: 'echo_1' }, query: { limit: 3 } }), { placement: 'any' }), { id: 'echo_1', limit: 3 })
  t.same(await dispatch(table, req('poke', { body: { n: 2 } }), { placement: 'owner', id: 'echo_9' }), { id: 'echo_9', n: 2, rid: 'req_1' })
})

t.test('an op that declares a second path id gets it as `sub`; one that does not gets an empty one', async (t) => {
  const params = { echo_id: 'echo_1', part_id: 'part_7' }
  t.same(await dispatch(table, req('part.get', { params }), { placement: 'owner', id: 'echo_1' }), { id: 'echo_1', sub: 'part_7' })
  t.same(await dispatch(table, req('partFind', { params }), { placement: 'any' }), { id: 'echo_1', sub: 'part_7' })
  t.same(await dispatch(table, req('list', { params }), { placement: 'any' }), { id: 'echo_1' }, 'list: no sub in its reply')
})

t.test('an op reached the wrong way, or one that does not exist, is refused (500, logged by the host)', async (t) => {
  for (const [op, placed] of [
    ['poke', { placement: 'any' }],
    ['list', { placement: 'owner', id: 'echo_1' }],
    ['nope', { placement: 'any' }],
    ['toString', { placement: 'any' }],
  ] as const) {
    const err = await dispatch(table, req(op), placed).then(
      () => undefined,
      (e: unknown) => e,
    )
    t.ok(isApiError(err) && err.status === 500 && err.reason === 'operation_not_placed', `${op} via ${placed.placement}`)
  }
})

t.test('the client serves ops placed on any host in-process, and sends owner ops over the wire to their subject', async (t) => {
  const sent: string[] = []
  const wire: ActorWire = {
    ask: async <T>(subject: string) => {
      sent.push(subject)
      return { id: 'remote' } as T
    },
    askEncoded: async () => {
      throw new Error('not used')
    },
  }
  const client = actorClient({ wire, local: (kind) => (kind === 'echo' ? table : undefined) })
  t.same(await client.call(Echo.ops.list, { id: 'echo_1', query: { limit: 1 } }), { id: 'echo_1', limit: 1 })
  t.same(sent, [], 'no NATS request for a local op')
  t.same(await client.call(Echo.ops.partFind, { id: 'echo_1', sub: 'part_2' }), { id: 'echo_1', sub: 'part_2' }, 'the second id travels too')
  await client.call(Echo.ops.poke, { id: 'echo_1', body: { n: 1 } })
  t.match(sent, [/^troupe\.echo\.p\d\d\.echo_1\.poke$/])
})
