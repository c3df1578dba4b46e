import Anthropic from '@anthropic-ai/sdk'
import t from 'tap'
import { connect } from '@nats-io/transport-node'
import { hostOf, placementOf } from '../helpers/placement.js'
import { startTroupe } from '../helpers/troupe.js'
import { agentAndEnv, sessionStack } from '../sessions/_helpers.js'
import { wakeOf } from './wake.js'

/**
 * The work queue on two hosts: a poll blocked through one host is woken by a session created through the other, and
 * items with their leases (state, last heartbeat, metadata) survive the SIGKILL of a host.
 */

const s = await sessionStack()
const b = await startTroupe({ natsUrl: s.nats.url, env: { TROUPE_MODEL_BASE_URL: s.model.url, ANTHROPIC_API_KEY: 'fake-key' } })
t.teardown(() => b.killNow())
const viaA = new Anthropic({ baseURL: s.url, apiKey: 'k', maxRetries: 5 })
const viaB = new Anthropic({ baseURL: b.url, apiKey: 'k', maxRetries: 8 })
const TOOLSET = [{ type: 'agent_toolset_20260401' }]

t.test('a poll blocked through one host is woken by an item queued through the other', async (t) => {
  const { agent, env } = await agentAndEnv(viaA, { tools: TOOLSET }, { config: { type: 'self_hosted' } })
  // Warm both paths first (the environment's owner is one of the two hosts).
  await viaA.beta.environments.work.poll(env.id)
  await viaB.beta.environments.work.poll(env.id)
  for (const [poller, creator, name] of [
    [viaA, viaB, 'A polls, B queues'],
    [viaB, viaA, 'B polls, A queues'],
  ] as const) {
    const wake = await wakeOf(poller, env.id, () => creator.beta.sessions.create({ agent: agent.id, environment_id: env.id } as any))
    t.equal(wake.answered, wake.queued, `${name}: the queued item`)
    t.ok(wake.answeredAfterMs < 999, `${name}: woken before the block ended (${wake.answeredAfterMs} ms; ${wake.undecided} undecided attempts)`)
  }
})

t.test('items and their leases survive the SIGKILL of the host that holds them', async (t) => {
  const nc = await connect({ servers: s.nats.url })
  t.teardown(() => nc.close())
  const ownerOf = await placementOf(nc, 'work_queue')
  // An environment whose queue lives on A, the host about to be killed.
  let made = await agentAndEnv(viaB, { tools: TOOLSET }, { config: { type: 'self_hosted' } })
  for (let i = 0; i < 30 && (await ownerOf(made.env.id)) !== hostOf(s.troupe); i++) {
    made = { agent: made.agent, env: await viaB.beta.environments.create({ name: 'e', config: { type: 'self_hosted' } } as any) }
  }
  t.equal(await ownerOf(made.env.id), hostOf(s.troupe), 'its queue is on the host killed')
  const { agent, env } = made
  const work = viaB.beta.environments.work
  const first = await viaB.beta.sessions.create({ agent: agent.id, environment_id: env.id } as any)
  const item = (await work.poll(env.id))!
  t.equal(item.data.id, first.id)
  await work.ack(item.id, { environment_id: env.id })
  const beat = await work.heartbeat(item.id, { environment_id: env.id, expected_last_heartbeat: 'NO_HEARTBEAT', desired_ttl_seconds: 120 })
  await work.update(item.id, { environment_id: env.id, metadata: { k: 'v' } })
  const second = await viaB.beta.sessions.create({ agent: agent.id, environment_id: env.id } as any)
  const before = (await work.list(env.id)).data

  await s.troupe.kill()
  const after = (await work.list(env.id)).data
  t.same(after, before, 'every item as it was')
  const next = await work.heartbeat(item.id, { environment_id: env.id, expected_last_heartbeat: beat.last_heartbeat })
  t.match(next, { state: 'active', lease_extended: true }, 'the lease goes on with its stored last heartbeat')
  const queued = await work.poll(env.id, { block_ms: 999 })
  t.equal(queued?.data.id, second.id, 'the queued item is handed out by the survivor')
  t.match(await work.retrieve(item.id, { environment_id: env.id }), { metadata: { k: 'v' }, state: 'active' })
})
