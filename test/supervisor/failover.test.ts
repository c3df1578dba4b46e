import t from 'tap'
import '../helpers/keepalive.js'
import { startNats } from '../helpers/nats.js'
import { clientFor, raw, startTroupe } from '../helpers/troupe.js'

const nats = await startNats()
const a = await startTroupe({ natsUrl: nats.url })
const b = await startTroupe({ natsUrl: nats.url })
t.teardown(() => {
  a.killNow()
  b.killNow()
  nats.stopNow()
})

t.test('SIGKILL of one host: everything stays reachable and nothing is lost', async (t) => {
  // Retries on: partitions move while the second host joins (a 503 with retry-after-ms meanwhile).
  const ca = clientFor(a.url, { maxRetries: 5 })
  const created: string[] = []
  for (let i = 0; i < 10; i++) created.push((await ca.beta.environments.create({ name: `before-${i}`, metadata: { i: String(i) } })).id)
  const updated = await ca.beta.environments.update(created[0]!, { description: 'kept' })
  const agent = await ca.beta.agents.create({ name: 'survivor', model: 'claude-sonnet-4-5' })
  const v2 = await ca.beta.agents.update(agent.id, { version: 1, system: 'second version' })
  t.equal(v2.version, 2)

  await a.kill()
  const cb = clientFor(b.url, { maxRetries: 5 })
  // Shared kinds answer at once from the survivor's queue group member.
  for (const id of created) t.equal((await cb.beta.environments.retrieve(id)).id, id)
  t.equal((await cb.beta.environments.retrieve(created[0]!)).description, updated.description)
  const after = await cb.beta.environments.create({ name: 'after' })
  const listed = new Set<string>()
  for await (const e of cb.beta.environments.list({ limit: 5 })) listed.add(e.id)
  for (const id of [...created, after.id]) t.ok(listed.has(id), `listed ${id}`)

  const back = await cb.beta.agents.retrieve(agent.id)
  t.same(back, v2, 'latest agent version intact')
  t.equal((await cb.beta.agents.retrieve(agent.id, { version: 1 })).system, null, 'version 1 intact')
  const v3 = await cb.beta.agents.update(agent.id, { version: 2, system: 'third' })
  t.equal(v3.version, 3, 'writes continue with CAS on the survivor')
  const versions: number[] = []
  for await (const v of cb.beta.agents.versions.list(agent.id)) versions.push(v.version)
  t.same(versions, [1, 2, 3])
  t.equal((await raw(b.url, 'GET', '/readyz')).status, 200)
})
