import { mkdtempSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import pino from 'pino'
import { connect } from '@nats-io/transport-node'
import { Kvm } from '@nats-io/kv'
import { actorClient } from '../../actors/kit/client.js'
import { actorWire } from '../../actors/kit/wire.js'
import { decode } from '../../protocol/codec.js'
import { isApiError } from '../../protocol/errors/api-error.js'
import { Buckets, PARTITIONS } from '../../protocol/subjects.js'
import { startActorHost } from '../../supervisor/host.js'
import { startNats } from '../helpers/nats.js'
import { until } from '../helpers/wait.js'
import { CounterKind, counterKind } from './counter-kind.js'

// The kit's promises, shown on a kind of a few dozen lines (counter-kind.ts): one activation per id however many
// ask at once, and a takeover that carries on from what was stored when the owning host dies.

const nats = await startNats()
t.teardown(() => nats.stopNow())
const log = pino({ level: process.env.TROUPE_TEST_LOG ?? 'silent' }, pino.destination(2))
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'troupe-counter-'))

async function host(name: string) {
  const nc = await connect({ servers: nats.url })
  const h = await startActorHost(nc, log, { dataDir }, { hostId: `host_${name}`, role: 'test', kinds: [counterKind] })
  t.teardown(async () => {
    await h.stop().catch(() => undefined)
    await nc.close().catch(() => undefined)
  })
  return { id: h.id, nc }
}

const hosts = [await host('a'), await host('b')]
const callerNc = await connect({ servers: nats.url })
t.teardown(() => callerNc.close())
const client = actorClient({ wire: actorWire(callerNc), local: () => undefined })
const add = (id: string, by = 1) => client.call(CounterKind.ops.add, { id, body: { by } })

t.test('both hosts serve counters: the partitions split evenly between them', async (t) => {
  const placement = await new Kvm(callerNc).open(Buckets.placement)
  let counts = new Map<string, number>()
  await until(
    'partitions split evenly',
    async () => {
      counts = new Map<string, number>()
      for await (const k of await placement.keys('counter.>')) {
        const e = await placement.get(k)
        const host = e?.operation === 'PUT' ? decode<{ host: string }>(e.value).host : undefined
        if (host) counts.set(host, (counts.get(host) ?? 0) + 1)
      }
      return hosts.every((h) => counts.get(h.id) === PARTITIONS / 2)
    },
    30_000,
    200,
  ).catch((err: Error) => {
    throw new Error(`${err.message}: held ${JSON.stringify(Object.fromEntries(counts))}`)
  })
  const served = new Set<string>()
  for (let i = 0; i < 16; i++) served.add((await add(`ctr_spread${i}`)).host)
  t.same([...served].sort(), hosts.map((h) => h.id).sort())
})

t.test('single activation: 100 adds at once, one actor, no update lost', async (t) => {
  const replies = await Promise.all(Array.from({ length: 100 }, () => add('ctr_one')))
  t.equal(new Set(replies.map((r) => `${r.host}/${r.activation}`)).size, 1, 'one host, one activation served them all')
  t.same(
    replies.map((r) => r.value).sort((a, b) => a - b),
    Array.from({ length: 100 }, (_, i) => i + 1),
    'each add saw the one before it',
  )
})

t.test('an actor that stops serving mid-request is answered as moving (503, retried), never a 500', async (t) => {
  const err = await client.call(CounterKind.ops.fenced, { id: 'ctr_fenced', body: {} }).then(
    () => undefined,
    (e: unknown) => e,
  )
  t.ok(isApiError(err), 'an API error')
  if (!isApiError(err)) return
  t.equal(err.status, 503)
  t.match(err.message, /moving to another host/)
})

t.test('takeover: the owner dies, the other host carries the counter on from what was stored', async (t) => {
  const before = await add('ctr_two', 5)
  const owner = hosts.find((h) => h.id === before.host)!
  // Gone without a word: its connection closes, its heartbeat lapses, the other host takes the partition over.
  await owner.nc.close()
  const after = await until(
    'served by the other host',
    async () => {
      try {
        return await add('ctr_two', 1)
      } catch (err) {
        if (isApiError(err) && err.status === 503) return undefined
        throw err
      }
    },
    30_000,
    100,
  )
  t.not(after.host, owner.id, 'the other host serves it now')
  t.equal(after.value, before.value + 1, 'from the stored value: nothing lost, nothing counted twice')
})
