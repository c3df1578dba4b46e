// Issue 40, point 3: three `troupe serve` started at the same moment on a 3-node cluster that has just elected its
// meta leader, TROUPE_REPLICAS=3 (a compose file, a rollout), all become ready and serve; none exits for a timeout.
import t from 'tap'
import '../helpers/keepalive.js'
import { type NatsCluster, startNatsCluster } from '../helpers/nats-cluster.js'
import { clientFor, logLines, raw, type TroupeProcess } from '../helpers/troupe.js'
import { scratch } from '../helpers/scratch.js'
import { until } from '../helpers/wait.js'

const files = scratch('troupe-together-')

t.test('three hosts started together on a fresh 3-node cluster all become ready and serve', async (t) => {
  const cluster = await startNatsCluster({ size: 3 })
  t.teardown(() => cluster.stop())
  // startNatsCluster returns as soon as a meta leader is elected and the API answers: the moment the user started.
  const hosts: TroupeProcess[] = await Promise.all(
    [1, 2, 3].map(() => files.start({ natsUrl: cluster.url, env: { TROUPE_REPLICAS: '3', TROUPE_DATA_DIR: files.dataDir() } })),
  )
  for (const [i, h] of hosts.entries()) {
    await until(`host ${i + 1} ready`, async () => (await raw(h.url, 'GET', '/readyz')).status === 200, 30_000)
    const agent = await clientFor(h.url, { maxRetries: 2 }).beta.agents.create({ name: `through ${i + 1}`, model: 'claude-sonnet-4-5' })
    t.match(agent.id, /^agent_/, `host ${i + 1} creates an agent`)
  }
  // What each host waited for, when it did: the start-ups' own account, for the run's record.
  for (const [i, h] of hosts.entries()) {
    const waits = logLines(h).filter((l) => /^start-up waits for JetStream/.test(String(l.msg)))
    t.comment(`host ${i + 1} waited ${waits.length} time(s)${waits.length ? `: ${waits.map((l) => l.step).join(', ')}` : ''}`)
  }
  await Promise.all(hosts.map((h) => h.stop()))
})

t.test('hosts started just after the meta leader died all become ready and serve', async (t) => {
  const cluster = await startNatsCluster({ size: 3 })
  t.teardown(() => cluster.stop())
  const leader = cluster.node((await cluster.metaLeader())!)
  await leader.kill()
  const starting = Promise.all([1, 2].map(() => files.start({ natsUrl: cluster.url, env: { TROUPE_REPLICAS: '3', TROUPE_DATA_DIR: files.dataDir() } })))
  // Down for a while after both hosts have connected (a fault's length, not a wait for anything): their start-ups
  // meet the meta election and streams placed on two servers of three, whatever the moment.
  await until('both hosts connected', async () => (await troupeConnections(cluster)) >= 2, 60_000, 200)
  await new Promise((r) => setTimeout(r, OUTAGE_MS))
  await leader.restart()
  const hosts = await starting
  for (const [i, h] of hosts.entries()) {
    await until(`host ${i + 1} ready`, async () => (await raw(h.url, 'GET', '/readyz')).status === 200, 30_000)
    const agent = await clientFor(h.url, { maxRetries: 2 }).beta.agents.create({ name: `through ${i + 1}`, model: 'claude-sonnet-4-5' })
    t.match(agent.id, /^agent_/, `host ${i + 1} creates an agent`)
    const waits = logLines(h).filter((l) => /^start-up waits for JetStream/.test(String(l.msg)))
    t.comment(`host ${i + 1} waited ${waits.length} time(s)${waits.length ? `: ${waits.map((l) => `${l.step} (${l.err})`).join(', ')}` : ''}`)
  }
  await Promise.all(hosts.map((h) => h.stop()))
})

/** How long the server stays down once the hosts have connected. */
const OUTAGE_MS = 5000

/** Client connections named `troupe` (the hosts') on the running servers. */
async function troupeConnections(cluster: NatsCluster): Promise<number> {
  let n = 0
  for (const node of cluster.nodes.filter((x) => x.state() === 'running')) {
    const res = await fetch(`${node.monitorUrl}/connz?limit=1024`).catch(() => undefined)
    const connz = (await res?.json().catch(() => undefined)) as { connections?: Array<{ name?: string }> } | undefined
    n += (connz?.connections ?? []).filter((c) => c.name === 'troupe').length
  }
  return n
}
