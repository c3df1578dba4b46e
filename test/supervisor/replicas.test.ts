// TROUPE_REPLICAS (issue 17, point 1): every stream and bucket the project creates gets that many copies, an
// existing one is brought to it at start-up, and a count NATS cannot give fails the start with what to do. Unset
// (issue 21, point 5), it follows the cluster: 3 where at least 3 JetStream servers answer, else 1.
import t from 'tap'
import { connect } from '@nats-io/transport-node'
import { jetstreamManager } from '@nats-io/jetstream'
import pino from 'pino'
import { ensureReplicas } from '../../actors/kit/replicas.js'
import { chooseReplicas } from '../../supervisor/replica-count.js'
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

const allAt = (streams: Record<string, number>, n: number) => Object.values(streams).every((r) => r === n)

t.test('on a 3-node cluster: an explicit count wins; unset, every stream is raised to 3; a default never lowers one', async (t) => {
  const cluster = await startNatsCluster({ size: 3 })
  t.teardown(() => cluster.stop())
  await cluster.waitReady()

  const first = await startTroupe({ natsUrl: cluster.url, env: { TROUPE_REPLICAS: '1' } })
  t.match(await replicasFact(first), /replicas\s+1 \(TROUPE_REPLICAS=1\)/)
  const before = await replicasOf(cluster.url)
  t.ok(Object.keys(before).length >= 6, `streams created: ${Object.keys(before).join(', ')}`)
  t.ok(allAt(before, 1), `R1 as set: ${JSON.stringify(before)}`)
  await first.stop()

  // Issue 21, point 5: three servers answer, nothing set, so 3; the streams made at R1 are raised.
  const second = await startTroupe({ natsUrl: cluster.url })
  t.match(await replicasFact(second), /replicas\s+3 \(JetStream cluster of 3 servers; TROUPE_REPLICAS unset\)/)
  const after = await replicasOf(cluster.url)
  t.same(Object.keys(after).sort(), Object.keys(before).sort(), 'the same streams')
  t.ok(allAt(after, 3), `every stream at 3: ${JSON.stringify(after)}`)
  await until('the change logged', () => /"msg":"stream replicas changed"/.test(second.logs()))
  await second.stop()

  // A default never lowers an existing stream's count; a set one does.
  const nc = await connect({ servers: cluster.node('n1').url })
  t.teardown(() => nc.close())
  const jsm = await jetstreamManager(nc)
  const log = pino({ level: 'silent' })
  const hosts = (await jsm.streams.info('KV_troupe_hosts')).config
  await ensureReplicas({ jsm, replicas: 1, log }, hosts.name, hosts)
  t.equal((await jsm.streams.info(hosts.name)).config.num_replicas, 3, 'a default of 1 leaves an R3 stream at 3')
  const scratch = await jsm.streams.add({ name: 'SCRATCH', subjects: ['scratch.>'], num_replicas: 3 })
  await ensureReplicas({ jsm, replicas: 1, lowerReplicas: true, log }, scratch.config.name, scratch.config)
  t.equal((await jsm.streams.info('SCRATCH')).config.num_replicas, 1, 'a set count of 1 lowers it')

  // One server down: two answer, so the default is 1 (which, as above, leaves the R3 streams as they are).
  await cluster.node('n3').kill()
  t.same(await chooseReplicas(undefined, nc, cluster.url), { count: 1, explicit: false, why: 'JetStream cluster of 2 servers; TROUPE_REPLICAS unset' })
  t.same(await chooseReplicas(3, nc, cluster.url), { count: 3, explicit: true, why: 'TROUPE_REPLICAS=3' }, 'a set count wins')
})

t.test('on a single server the default is 1', async (t) => {
  const nats = await startNats()
  t.teardown(() => nats.stopNow())
  const p = await startTroupe({ natsUrl: nats.url })
  t.teardown(() => p.killNow())
  t.match(await replicasFact(p), /replicas\s+1 \(a single JetStream server; TROUPE_REPLICAS unset\)/)
  t.ok(allAt(await replicasOf(nats.url), 1), 'every stream at 1')
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
