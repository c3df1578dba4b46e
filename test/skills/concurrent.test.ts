import { toFile } from '@anthropic-ai/sdk'
import { jetstream } from '@nats-io/jetstream'
import { Objm } from '@nats-io/obj'
import { connect } from '@nats-io/transport-node'
import t from 'tap'
import { ObjectStores } from '../../protocol/subjects.js'
import '../helpers/keepalive.js'
import { startNats } from '../helpers/nats.js'
import { clientFor, startTroupe, type TroupeProcess } from '../helpers/troupe.js'
import { until } from '../helpers/wait.js'

/**
 * Several processes serving skills at once (issue 27, point 3: the spec's one-process assumption is a limitation we
 * remove): uploads through two gateways to one skill get distinct version numbers, none lost; an owner SIGKILLed right
 * after a version's delete was answered leaves it hidden, and its bytes are gone once the partition's next owner has
 * resumed the deletion.
 */

const nats = await startNats()
const procs: TroupeProcess[] = []
t.teardown(() => {
  for (const p of procs) p.killNow()
  nats.stopNow()
})

const bundle = (n: number) =>
  Promise.all([
    toFile(Buffer.from(`---\nname: shared\ndescription: Upload ${n}.\n---\n\nBody ${n}.\n`), 'shared/SKILL.md'),
    toFile(Buffer.from(`data ${n}\n`), 'shared/data.txt'),
  ])

t.test('two gateways, one skill: every upload a version of its own', async (t) => {
  const [a, b] = await Promise.all([0, 1].map(() => startTroupe({ natsUrl: nats.url })))
  procs.push(a!, b!)
  const ca = clientFor(a!.url, { maxRetries: 3 })
  const cb = clientFor(b!.url, { maxRetries: 3 })
  const skill = await ca.beta.skills.create({ files: await bundle(0) } as any)
  const made = await Promise.all([1, 2, 3, 4, 5, 6].map(async (n) => (n % 2 ? ca : cb).beta.skills.versions.create(skill.id, { files: await bundle(n) })))
  t.same(
    made.map((v) => Number(v.id)).sort((x, y) => x - y),
    [2, 3, 4, 5, 6, 7],
    'distinct numbers, none lost',
  )
  for (const v of made) t.match(v.description, /^Upload \d\.$/)
  const listed = await cb.beta.skills.versions.list(skill.id, { limit: 100 } as any)
  t.equal(listed.data.length, 7)
  t.equal((await ca.beta.skills.retrieve(skill.id)).latest_version_id, '7')

  // A delete answered, then every host SIGKILLed and one started again: the version stays hidden, its bytes go.
  const nc = await connect({ servers: nats.url })
  t.teardown(() => nc.close())
  const os = await new Objm(jetstream(nc)).open(ObjectStores.skills)
  const objects = async () => (await os.list()).filter((o) => o.name.startsWith(`${skill.id}.`)).length
  t.equal(await objects(), 7)
  await ca.beta.skills.versions.delete('3', { skill_id: skill.id })
  await Promise.all([a!.kill(), b!.kill()])
  const c = await startTroupe({ natsUrl: nats.url })
  procs.push(c)
  const cc = clientFor(c.url, { maxRetries: 3 })
  t.equal((await cc.beta.skills.versions.list(skill.id, { limit: 100 } as any)).data.length, 6, 'hidden, also after the crash')
  await until('the deleted version’s bytes to go', async () => (await objects()) === 6, 30_000, 200)
})
