import { mkdtempSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Kvm } from '@nats-io/kv'
import { connect } from '@nats-io/transport-node'
import t from 'tap'
import { outputsKey } from '../../actors/workdir/outputs/state.js'
import { Buckets } from '../../protocol/subjects.js'
import { expectedSandbox } from '../helpers/sandbox-backend.js'
import { clientFor, startTroupe } from '../helpers/troupe.js'
import { agentAndEnv, collect, isIdle, sessionStack } from './_helpers.js'

/**
 * Session outputs across a restart (SIGKILL, then a new process on the same data directory and NATS): what was
 * published is known from `troupe_session_outputs`, so nothing is published twice; and with that record lost (as
 * after a crash between the publish and its record) the ids derived from the bytes find the Files already there.
 */

const dataDir = mkdtempSync(path.join(os.tmpdir(), 'troupe-outputs-restart-'))
const env = { TROUPE_DATA_DIR: dataDir }
const s = await sessionStack(env)
const OUT = expectedSandbox() === 'local' ? 'outputs' : '/mnt/session/outputs'
let client = s.client

async function turn(id: string, command: string) {
  s.model.enqueue({ steps: [{ type: 'tool_use', name: 'bash', input: { command } }] }, { steps: [{ type: 'text', text: 'done' }] })
  const stream = await client.beta.sessions.events.stream(id)
  await client.beta.sessions.events.send(id, { events: [{ type: 'user.message', content: [{ type: 'text', text: 'go' }] }] } as any)
  return collect(stream, isIdle, 60_000)
}

async function published(id: string) {
  const all = []
  for await (const f of client.beta.files.list({ scope_id: id })) all.push(f)
  return all.map((f) => `${f.filename} ${f.id}`).sort()
}

t.test('a restart publishes nothing twice; a lost record finds the Files already published', async (t) => {
  const { agent, env: environment } = await agentAndEnv(client, { tools: [{ type: 'agent_toolset_20260401' }] })
  const session = await client.beta.sessions.create({ agent: agent.id, environment_id: environment.id } as any)
  await turn(session.id, `mkdir -p ${OUT}/d && printf a > ${OUT}/a.txt && printf b > ${OUT}/d/b.txt`)
  const before = await published(session.id)
  t.equal(before.length, 2)

  await s.troupe.kill()
  const again = await startTroupe({
    natsUrl: s.nats.url,
    env: { TROUPE_MODEL_BASE_URL: s.model.url, ANTHROPIC_API_KEY: 'fake-key', TROUPE_MODEL_RETRY_BASE_MS: '20', ...env },
  })
  t.teardown(() => again.killNow())
  client = clientFor(again.url, { maxRetries: 3 })

  await turn(session.id, 'echo nothing new')
  t.same(await published(session.id), before, 'unchanged files are not published again by the new process')

  const nc = await connect({ servers: s.nats.url })
  t.teardown(() => nc.close())
  const kv = await new Kvm(nc).open(Buckets.sessionOutputs)
  t.ok(await kv.get(outputsKey(session.id)), 'the record of what was published')
  await kv.delete(outputsKey(session.id))
  await turn(session.id, `printf c > ${OUT}/c.txt`)
  const after = await published(session.id)
  t.equal(after.length, 3, 'only the new file')
  t.ok(
    before.every((f) => after.includes(f)),
    'the files published before are found under the ids their bytes give, not published again',
  )
  const rec = await kv.get(outputsKey(session.id))
  t.ok(rec?.value.length, 'the record is written again')
})
