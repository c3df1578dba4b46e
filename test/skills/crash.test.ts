import { toFile } from '@anthropic-ai/sdk'
import { jetstream } from '@nats-io/jetstream'
import { Objm } from '@nats-io/obj'
import { connect } from '@nats-io/transport-node'
import t from 'tap'
import { uploadObjectName } from '../../protocol/files.js'
import { ObjectStores } from '../../protocol/subjects.js'
import '../helpers/keepalive.js'
import { startNats } from '../helpers/nats.js'
import { clientFor, startTroupe, type TroupeProcess } from '../helpers/troupe.js'
import { until } from '../helpers/wait.js'

/**
 * A host SIGKILLed mid-upload (issue 27, point 3): its canonical zip stored, its version never recorded. Nothing of it
 * is visible (a version is listed whole or not at all), and the next start sweeps the bytes (TROUPE_SWEEP_AGE_S,
 * lowered here from its 10 minutes), leaving every recorded version's bytes alone.
 */

const nats = await startNats()
const procs: TroupeProcess[] = []
t.teardown(() => {
  for (const p of procs) p.killNow()
  nats.stopNow()
})
const env = { TROUPE_SWEEP_AGE_S: '1' }

t.test('an upload whose host died before recording it: never visible, its bytes swept at the next start', async (t) => {
  const first = await startTroupe({ natsUrl: nats.url, env })
  procs.push(first)
  const client = clientFor(first.url, { maxRetries: 3 })
  const files = await Promise.all([toFile(Buffer.from('---\nname: kept\ndescription: Kept.\n---\n'), 'kept/SKILL.md')])
  const skill = await client.beta.skills.create({ files } as any)
  await first.kill()

  // What the killed gateway left: the bytes of a second version, stored whole, never recorded.
  const nc = await connect({ servers: nats.url })
  t.teardown(() => nc.close())
  const os = await new Objm(jetstream(nc)).open(ObjectStores.skills)
  const orphan = uploadObjectName(skill.id)
  await os.put({ name: orphan }, new Blob([new Uint8Array(1024).fill(7)]).stream())
  const names = async () => (await os.list()).map((o) => o.name).sort()
  t.equal((await names()).length, 2)

  const second = await startTroupe({ natsUrl: nats.url, env })
  procs.push(second)
  const again = clientFor(second.url, { maxRetries: 3 })
  t.same(
    (await again.beta.skills.versions.list(skill.id)).data.map((v) => v.id),
    ['1'],
    'only the recorded version',
  )
  await until('the orphan swept', async () => !(await names()).includes(orphan), 15_000, 200)
  t.equal((await names()).length, 1, "the recorded version's bytes stay")
  const zip = Buffer.from(await (await again.beta.skills.versions.download('1', { skill_id: skill.id })).arrayBuffer())
  t.ok(zip.length > 0)
})
