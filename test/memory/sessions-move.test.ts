import { existsSync, mkdtempSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import { startFakeModelServer } from '../fakes/model-server.js'
import '../helpers/keepalive.js'
import { startNats } from '../helpers/nats.js'
import { isolatedOrSkip } from '../helpers/sandbox-backend.js'
import { clientFor, startTroupe, type TroupeProcess } from '../helpers/troupe.js'
import { collect, isIdle } from '../sessions/_helpers.js'

/**
 * A session's memory mounts across moves (issue 42 point 4): the host that takes a session over materialises its
 * stores as stored, and a host that gets it back puts the store's state over whatever its old directory held. Hosts
 * run one at a time on one NATS, each with its own data directory, so the session lives on the one that runs.
 */

const isolated = isolatedOrSkip()
const nats = await startNats()
const model = await startFakeModelServer()
t.teardown(async () => {
  await model.close()
  nats.stopNow()
})
const hosts: TroupeProcess[] = []
t.teardown(() => {
  for (const h of hosts) h.killNow()
})
async function host(dataDir: string): Promise<TroupeProcess> {
  const p = await startTroupe({
    natsUrl: nats.url,
    env: { TROUPE_DATA_DIR: dataDir, TROUPE_MODEL_BASE_URL: model.url, ANTHROPIC_API_KEY: 'k', TROUPE_MODEL_RETRY_BASE_MS: '20' },
  })
  hosts.push(p)
  return p
}
const dir = () => mkdtempSync(path.join(os.tmpdir(), 'troupe-mem-move-'))

/** One turn on `url` in which the model runs each bash command in turn; the tool results' texts. */
async function bash(url: string, session: string, ...commands: string[]): Promise<string[]> {
  const client = clientFor(url, { maxRetries: 8 })
  model.enqueue(...commands.map((command) => ({ steps: [{ type: 'tool_use' as const, name: 'bash', input: { command } }] })), {
    steps: [{ type: 'text', text: 'done' }],
  })
  const stream = await client.beta.sessions.events.stream(session)
  await client.beta.sessions.events.send(session, { events: [{ type: 'user.message', content: [{ type: 'text', text: 'go' }] }] } as any)
  const events = await collect(stream, isIdle, 60_000)
  return events.filter((e) => e.type === 'agent.tool_result').map((e) => (e.content as any[]).map((c) => c.text).join('\n'))
}

t.test('a moved session gets its mounts as stored, not as the old host left them', isolated, async (t) => {
  const dirA = dir()
  const dirB = dir()
  let a = await host(dirA)
  const client = clientFor(a.url, { maxRetries: 8 })
  const store = await client.beta.memoryStores.create({ name: 'moving' })
  const agent = await client.beta.agents.create({ name: 'm', model: 'claude-sonnet-4-5', tools: [{ type: 'agent_toolset_20260401' }] } as any)
  const env = await client.beta.environments.create({ name: 'm' })
  const session = await client.beta.sessions.create({
    agent: agent.id,
    environment_id: env.id,
    resources: [{ type: 'memory_store', memory_store_id: store.id }],
  } as any)
  await bash(a.url, session.id, 'echo one > /mnt/memory/moving/notes.md')
  const mountA = path.join(dirA, 'sessions', session.id, 'memory', 'moving')
  t.ok(existsSync(path.join(mountA, 'notes.md')))

  // The host dies; on its disk, what it never stored (as a tool cut off before its changes were sent leaves it).
  await a.kill()
  writeFileSync(path.join(mountA, 'stray.md'), 'never stored')
  writeFileSync(path.join(mountA, 'notes.md'), 'changed, never stored')
  const b = await host(dirB)
  const viaB = clientFor(b.url, { maxRetries: 8 })
  const [m] = (await viaB.beta.memoryStores.memories.list(store.id)).data as any[]
  await viaB.beta.memoryStores.memories.update(m.id, { memory_store_id: store.id, content: 'two\n' })
  const [onB] = await bash(b.url, session.id, 'cat /mnt/memory/moving/notes.md; ls /mnt/memory/moving')
  t.match(onB, /^two\nnotes\.md(\n|$)/, "the new host's mount is the store's")

  // Back on the first host's disk: the store's state, not what that disk held.
  await b.kill()
  a = await host(dirA)
  const [back] = await bash(a.url, session.id, 'cat /mnt/memory/moving/notes.md; ls /mnt/memory/moving')
  t.match(back, /^two\nnotes\.md(\n|$)/)
  t.notMatch(back, /stray/, 'what the old disk held and the store never had is gone')
  await a.stop()
})
