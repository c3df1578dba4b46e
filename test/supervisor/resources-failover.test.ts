import { toFile } from '@anthropic-ai/sdk'
import { Kvm } from '@nats-io/kv'
import { connect } from '@nats-io/transport-node'
import t from 'tap'
import '../helpers/keepalive.js'
import { decode } from '../../protocol/codec.js'
import { Buckets, PARTITIONS } from '../../protocol/subjects.js'
import { startFakeModelServer } from '../fakes/model-server.js'
import { startNats } from '../helpers/nats.js'
import { hostOf, placementOf } from '../helpers/placement.js'
import { clientFor, startTroupe } from '../helpers/troupe.js'
import { until } from '../helpers/wait.js'
import { collect, isIdle } from '../sessions/_helpers.js'

// A session's files after its owner dies: the host that takes the session over (its own data directory, as another
// machine would have) puts them in place at its first tool, from the copies in the store.

t.setTimeout(180_000)

const model = await startFakeModelServer()
const nats = await startNats()
const env = { TROUPE_MODEL_BASE_URL: model.url, ANTHROPIC_API_KEY: 'k', TROUPE_MODEL_RETRY_BASE_MS: '20', TROUPE_SANDBOX: 'local' }
const a = await startTroupe({ natsUrl: nats.url, env })
const b = await startTroupe({ natsUrl: nats.url, env })
t.teardown(() => {
  a.killNow()
  b.killNow()
  nats.stopNow()
  void model.close()
})
const nc = await connect({ servers: nats.url })
t.teardown(() => void nc.close())
const placement = await new Kvm(nc).open(Buckets.placement)
const ownerOf = await placementOf(nc, 'session')

await until(
  'partitions split evenly',
  async () => {
    const counts = new Map<string, number>()
    for await (const k of await placement.keys('session.>')) {
      const e = await placement.get(k)
      const host = e?.operation === 'PUT' ? decode<{ host: string }>(e.value).host : undefined
      if (host) counts.set(host, (counts.get(host) ?? 0) + 1)
    }
    return counts.get(hostOf(a)!) === PARTITIONS / 2 && counts.get(hostOf(b)!) === PARTITIONS / 2
  },
  60_000,
  50,
)

t.test('the new owner mounts the files its predecessor had', async (t) => {
  const first = clientFor(a.url, { maxRetries: 6 })
  const agent = await first.beta.agents.create({ name: 'files', model: 'claude-sonnet-4-5', tools: [{ type: 'agent_toolset_20260401' }] } as any)
  const environment = await first.beta.environments.create({ name: 'files' })
  const file = await first.beta.files.upload({ file: await toFile(Buffer.from('survives the owner\n'), 'f.txt', { type: 'text/plain' }) })
  const session = await first.beta.sessions.create({
    agent: agent.id,
    environment_id: environment.id,
    resources: [{ type: 'file', file_id: file.id, mount_path: '/mnt/session/uploads/in/f.txt' }],
  } as any)
  const owner = (await ownerOf(session.id)) === hostOf(a) ? a : b
  const survivor = owner === a ? b : a
  const client = clientFor(survivor.url, { maxRetries: 6 })
  const turn = async () => {
    model.enqueue({ steps: [{ type: 'tool_use', name: 'bash', input: { command: 'cat uploads/in/f.txt' } }] }, {})
    const stream = await client.beta.sessions.events.stream(session.id)
    await client.beta.sessions.events.send(session.id, { events: [{ type: 'user.message', content: [{ type: 'text', text: 'read' }] }] } as any)
    const events = await collect(stream, isIdle, 30_000)
    return events.find((e) => e.type === 'agent.tool_result')
  }
  t.equal((await turn()).content[0].text, 'survives the owner', 'on the first owner')
  await owner.kill()
  await until('the survivor owns the session', async () => (await ownerOf(session.id)) === hostOf(survivor), 30_000, 100)
  const after = await turn()
  t.equal(after.is_error, false)
  t.equal(after.content[0].text, 'survives the owner', 'on the new owner, from the copy in the store')
})
