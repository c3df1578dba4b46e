// Issue 40, point 3: three `troupe serve` started at the same moment on a 3-node cluster that has just elected its
// meta leader, TROUPE_REPLICAS=3 (a compose file, a rollout), all become ready and serve; none exits for a timeout.
import t from 'tap'
import '../helpers/keepalive.js'
import { startNatsCluster } from '../helpers/nats-cluster.js'
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
