import t from 'tap'
import { connect, type NatsConnection } from '@nats-io/transport-node'
import { Kvm } from '@nats-io/kv'
import { pino } from 'pino'
import { PARTITIONS, Buckets } from '../../protocol/subjects.js'
import { LEASE_TTL_MS, PartitionLeases } from '../../supervisor/partitions.js'
import { startNats } from '../helpers/nats.js'

const nats = await startNats()
const conns: NatsConnection[] = []
t.teardown(async () => {
  for (const nc of conns) await nc.close().catch(() => undefined)
  await nats.stop()
})

async function holder(id: string, hosts: () => number) {
  const nc = await connect({ servers: nats.url })
  conns.push(nc)
  const kv = await new Kvm(nc).create(Buckets.leases, { ttl: LEASE_TTL_MS, history: 1 })
  const held = new Set<number>()
  const gainedAt = new Map<number, number>()
  const leases = new PartitionLeases(kv, 'session', id, hosts, {
    gained: async (p) => {
      held.add(p)
      gainedAt.set(p, Date.now())
    },
    lost: async (p) => {
      held.delete(p)
    },
  }, pino({ level: 'silent' }))
  await leases.start()
  return { leases, held, gainedAt, nc }
}

const until = async (what: string, ok: () => boolean, ms: number) => {
  const end = Date.now() + ms
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out: ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

t.test('single activation: partitions split, never held twice, and move within 5 s of a crash', async (t) => {
  let live = 1
  const a = await holder('host_a', () => live)
  t.equal(a.held.size, PARTITIONS, 'a lone host takes every partition')
  live = 2
  const b = await holder('host_b', () => live)
  await until('both hold half', () => a.held.size === PARTITIONS / 2 && b.held.size === PARTITIONS / 2, 15_000)
  for (let p = 0; p < PARTITIONS; p++) t.ok(a.held.has(p) !== b.held.has(p), `partition ${p} has exactly one owner`)

  const crashed = [...a.held]
  a.leases.halt()
  await a.nc.close()
  const crashAt = Date.now()
  live = 1
  await until('b takes over', () => b.held.size === PARTITIONS, 5_000)
  const worst = Math.max(...crashed.map((p) => b.gainedAt.get(p)! - crashAt))
  t.ok(worst < 5_000, `takeover within 5 s (took ${worst} ms)`)
  await b.leases.stop()
  t.equal(b.held.size, 0, 'stop releases')
})
