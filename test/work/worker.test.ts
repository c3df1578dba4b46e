import { mkdtempSync, readFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import { agentAndEnv, collect, sessionStack } from '../sessions/_helpers.js'

/**
 * The self-hosted work queue end to end, through the official client's own worker (`work.worker()`): a session of a
 * self-hosted environment queues an item, the worker claims it, runs the session's tool use in its workdir with its
 * sessions token, the turn resumes with its result, and the item stops once the worker leaves the idle session.
 */

const s = await sessionStack()
const TOOLSET = [{ type: 'agent_toolset_20260401' }]
const say = (text: string) => ({ type: 'user.message', content: [{ type: 'text', text }] })

t.test('a worker runs a self-hosted session’s tool use; the turn resumes; its item stops when it leaves', async (t) => {
  const { agent, env } = await agentAndEnv(s.client, { tools: TOOLSET }, { config: { type: 'self_hosted' } })
  const session = await s.client.beta.sessions.create({ agent: agent.id, environment_id: env.id } as any)
  const work = s.client.beta.environments.work
  const [queued] = (await work.list(env.id)).data
  t.match(queued, { type: 'work', state: 'queued', environment_id: env.id, data: { type: 'session', id: session.id }, secret: null })

  const workdir = mkdtempSync(path.join(os.tmpdir(), 'troupe-worker-'))
  s.model.enqueue(
    { steps: [{ type: 'tool_use', name: 'bash', input: { command: 'echo from-the-worker > made.txt && cat made.txt' } }] },
    { steps: [{ type: 'text', text: 'done' }] },
  )
  const stream = await s.client.beta.sessions.events.stream(session.id)
  await s.client.beta.sessions.events.send(session.id, { events: [say('make a file')] } as any)

  const ac = new AbortController()
  const worker = work.worker({ environmentId: env.id, environmentKey: 'any-key', workdir, maxIdleMs: 1500, signal: ac.signal } as any)
  const running = worker.run().catch((err: unknown) => (ac.signal.aborted ? undefined : Promise.reject(err)))

  const events = await collect(stream, (e) => e.type === 'session.status_idle' && e.stop_reason?.type === 'end_turn', 20_000)
  const types = events.map((e) => e.type)
  t.ok(types.includes('agent.tool_use'), 'the model asked for bash')
  const result = events.find((e) => e.type === 'user.tool_result')
  t.ok(result, 'the worker answered with user.tool_result')
  t.match(JSON.stringify(result.content), /from-the-worker/)
  t.equal(readFileSync(path.join(workdir, 'made.txt'), 'utf8'), 'from-the-worker\n', 'it ran in the worker’s workdir')
  t.equal(events.filter((e) => e.type === 'agent.tool_result').length, 0, 'the service ran nothing itself')

  // Idle past maxIdleMs: the worker leaves the session and force-stops its item.
  const deadline = Date.now() + 15_000
  let item = await work.retrieve(queued!.id, { environment_id: env.id })
  while (item.state !== 'stopped' && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 200))
    item = await work.retrieve(queued!.id, { environment_id: env.id })
  }
  t.match(item, { state: 'stopped', secret: null })
  t.ok(item.acknowledged_at && item.started_at && item.latest_heartbeat_at && item.stopped_at, 'acked, beaten and stopped')

  // New input after its item stopped queues the next one, which the worker (still polling) takes.
  s.model.enqueue({ steps: [{ type: 'text', text: 'again' }] })
  await s.client.beta.sessions.events.send(session.id, { events: [say('once more')] } as any)
  const items = (await work.list(env.id)).data
  t.equal(items.length, 2, 'a second item for the session')
  t.equal(items.filter((i) => i.state !== 'stopped').length <= 1, true, 'at most one live item')
  ac.abort()
  await running
})

t.test('a worker that leaves while tools wait owes a successor; one that leaves an ended turn does not', async (t) => {
  const { agent, env } = await agentAndEnv(s.client, { tools: TOOLSET }, { config: { type: 'self_hosted' } })
  const session = await s.client.beta.sessions.create({ agent: agent.id, environment_id: env.id } as any)
  const work = s.client.beta.environments.work
  const item = (await work.poll(env.id))!
  await work.ack(item.id, { environment_id: env.id })
  const beat = await work.heartbeat(item.id, { environment_id: env.id, expected_last_heartbeat: 'NO_HEARTBEAT' })
  s.model.enqueue({ steps: [{ type: 'tool_use', name: 'bash', input: { command: 'true' } }] }, { steps: [{ type: 'text', text: 'ok' }] })
  let stream = await s.client.beta.sessions.events.stream(session.id)
  await s.client.beta.sessions.events.send(session.id, { events: [say('go')] } as any)
  const parked = await collect(stream, (e) => e.type === 'session.status_idle')
  const use = parked.find((e) => e.type === 'agent.tool_use')
  t.same(parked.at(-1).stop_reason, { type: 'requires_action', event_ids: [use.id] })
  // The worker leaves without answering (its runner gave up just as the turn parked): a successor is queued.
  await new Promise((r) => setTimeout(r, 200))
  await work.stop(item.id, { environment_id: env.id, force: true })
  const [next] = (await work.list(env.id)).data
  t.match(next, { state: 'queued', data: { id: session.id } })
  t.not(next!.id, item.id, 'a new item for the waiting tool use')
  t.ok(beat.last_heartbeat)

  // This time the tool is answered and the turn ends: the worker's leaving owes nothing.
  const claimed = (await work.poll(env.id))!
  await work.ack(claimed.id, { environment_id: env.id })
  await work.heartbeat(claimed.id, { environment_id: env.id, expected_last_heartbeat: 'NO_HEARTBEAT' })
  stream = await s.client.beta.sessions.events.stream(session.id)
  await s.client.beta.sessions.events.send(session.id, {
    events: [{ type: 'user.tool_result', tool_use_id: use.id, content: [{ type: 'text', text: 'ok' }] }],
  } as any)
  await collect(stream, (e) => e.type === 'session.status_idle' && e.stop_reason.type === 'end_turn')
  await new Promise((r) => setTimeout(r, 200))
  await work.stop(claimed.id, { environment_id: env.id, force: true })
  const items = (await work.list(env.id)).data
  t.equal(items.length, 2, 'no successor')
  t.ok(items.every((i) => i.state === 'stopped'))
})
