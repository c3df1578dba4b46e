// TROUPE_REPLICAS (issue 17, point 1): every stream and bucket the project creates gets that many copies, an
// existing one is brought to it at start-up, and a count NATS cannot give fails the start with what to do.
import t from 'tap'
import { connect } from '@nats-io/transport-node'
import { jetstreamManager } from '@nats-io/jetstream'
import { startNatsCluster } from '../helpers/nats-cluster.js'
import { startNats } from '../helpers/nats.js'
import { startTroupe } from '../helpers/troupe.js'
import { until } from '../helpers/wait.js'
import '../helpers/keepalive.js'

/** The start-up block's replicas line, once printed (it follows the "listening on" line). */
async function replicasFact(p: { stdout(): string }): Promise<string> {
  for (let i = 0; i < 200 && !/replicas +\d/.test(p.stdout()); i++) await new Promise((r) => setTimeout(r, 50))
  return /replicas +.*/.exec(p.stdout())?.[0] ?? ''
}

/** Every stream of the project (the events stream and the KV buckets' streams) with its replica count. */
async function replicasOf(url: string): Promise<Record<string, number>> {
  const nc = await connect({ servers: url.split(',') })
  try {
    const jsm = await jetstreamManager(nc)
    const out: Record<string, number> = {}
    for await (const s of jsm.streams.list()) out[s.config.name] = s.config.num_replicas
    return out
  } finally {
    await nc.close()
  }
}

t.test('on a 3-node cluster every stream and bucket has 3 replicas, and an existing R1 store is raised to 3', async (t) => {
  const cluster = await startNatsCluster({ size: 3 })
  t.teardown(() => cluster.stop())
  await cluster.waitReady()

  const first = await startTroupe({ natsUrl: cluster.url })
  t.match(await replicasFact(first), /replicas\s+1 \(one copy of every stream and bucket\)/)
  const before = await replicasOf(cluster.url)
  t.ok(Object.keys(before).length >= 6, `streams created: ${Object.keys(before).join(', ')}`)
  t.ok(
    Object.values(before).every((n) => n === 1),
    'R1 by default',
  )
  await first.stop()

  const second = await startTroupe({ natsUrl: cluster.url, env: { TROUPE_REPLICAS: '3' } })
  t.teardown(() => second.killNow())
  t.match(await replicasFact(second), /replicas\s+3 \(every stream and bucket on 3 servers\)/)
  const after = await replicasOf(cluster.url)
  t.same(Object.keys(after).sort(), Object.keys(before).sort(), 'the same streams')
  t.same(
    Object.values(after),
    Object.values(after).map(() => 3),
    `every stream at 3: ${JSON.stringify(after)}`,
  )
  await until('the change logged', () => /"msg":"stream replicas changed"/.test(second.logs()))
})

t.test('a replica count NATS cannot give fails the start, saying what to do', async (t) => {
  const nats = await startNats()
  t.teardown(() => nats.stopNow())
  const err = await startTroupe({ natsUrl: nats.url, env: { TROUPE_REPLICAS: '3' } }).then(
    (p) => {
      p.killNow()
      return undefined
    },
    (e: Error) => e,
  )
  t.ok(err, 'the start failed')
  t.match(err?.message, /NATS refused 3 replicas .*TROUPE_REPLICAS needs a JetStream cluster of at least that many servers/)

  const embedded = await startTroupe({ role: 'start', env: { TROUPE_REPLICAS: '3' } }).then(
    (p) => {
      p.killNow()
      return undefined
    },
    (e: Error) => e,
  )
  t.match(embedded?.message, /TROUPE_REPLICAS=3 needs a JetStream cluster of at least 3 servers \(set NATS_URL\); the embedded nats-server keeps one copy/)
  const bad = await startTroupe({ natsUrl: nats.url, env: { TROUPE_REPLICAS: '7' } }).then(
    (p) => {
      p.killNow()
      return undefined
    },
    (e: Error) => e,
  )
  t.match(bad?.message, /TROUPE_REPLICAS must be at most 5, NATS's limit \(was 7\)/)
})
