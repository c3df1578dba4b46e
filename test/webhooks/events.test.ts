import Anthropic from '@anthropic-ai/sdk'
import { jetstreamManager } from '@nats-io/jetstream'
import { Kvm } from '@nats-io/kv'
import { connect } from '@nats-io/transport-node'
import t from 'tap'
import { DELIVERIES_CONSUMER, DELIVERIES_STREAM } from '../../actors/webhook/deliveries.js'
import { positionOf } from '../../actors/webhook/source-reader.js'
import { SPEC_WEBHOOK_EVENT_TYPES } from '../../protocol/schemas/webhook.js'
import { Buckets, EVENTS_STREAM, OUTBOX_STREAM, WORKSPACE_ID } from '../../protocol/subjects.js'
import { startFakeModelServer } from '../fakes/model-server.js'
import '../helpers/keepalive.js'
import { startNats } from '../helpers/nats.js'
import { clientFor, raw, startTroupe } from '../helpers/troupe.js'
import { until } from '../helpers/wait.js'
import { agentAndEnv, collect, isIdle } from '../sessions/_helpers.js'
import { deliveringEnv, startReceiver } from './_helpers.js'

/**
 * Lifecycle events reach endpoints (issue 26 point 3): each moment of a session makes its thin event, delivered signed
 * (verified with the official client's `unwrap()`), to the endpoints subscribed to its type at that moment: one
 * created later gets none of what came before, one disabled gets nothing of its disabled time, one whose types changed
 * gets what it was subscribed to when each event happened. "Everything that will be delivered has been" is read from
 * the fan-out's and the deliveries' consumers, not waited for.
 */

const receiver = await startReceiver()
const model = await startFakeModelServer()
const nats = await startNats()
const troupe = await startTroupe({
  role: 'start',
  natsUrl: nats.url,
  env: deliveringEnv(receiver, model),
})
const nc = await connect({ servers: nats.url })
t.teardown(async () => {
  troupe.killNow()
  await nc.close()
  nats.stopNow()
  receiver.close()
  await model.close()
})
const client = clientFor(troupe.url, { maxRetries: 3 })
const H = { 'x-api-key': 'k', 'anthropic-version': '2023-06-01' }
const MODEL = 'claude-sonnet-4-5'
/** Every session event of a session without threads (outcomes come with their issue). */
const ALL = SPEC_WEBHOOK_EVENT_TYPES.filter((type) => type.startsWith('session.') && !/thread|outcome/.test(type))

const secrets = new Map<string, string>()
async function endpoint(path: string, eventTypes: string[]): Promise<string> {
  const r = await raw(troupe.url, 'POST', '/v1/webhooks', { url: `https://hooks.example.test${path}`, event_types: eventTypes }, H)
  if (r.status !== 200) throw new Error(`endpoint create: ${r.status} ${r.text}`)
  secrets.set(path, r.json.signing_secret)
  return r.json.id
}
const updateEndpoint = async (id: string, body: object) => {
  const r = await raw(troupe.url, 'POST', `/v1/webhooks/${id}`, body, H)
  if (r.status !== 200) throw new Error(`endpoint update: ${r.status} ${r.text}`)
}

/** The events `path` received, each verified with its endpoint's secret by the official client. */
function received(path: string): any[] {
  const verifier = new Anthropic({ apiKey: 'x', webhookKey: secrets.get(path)! }) as any
  return receiver.got
    .filter((g) => g.path === path)
    .map((g) => {
      const e = verifier.beta.webhooks.unwrap(g.body, { headers: g.headers })
      if (g.headers['webhook-id'] !== e.id) throw new Error(`webhook-id ${g.headers['webhook-id']} is not the event's id ${e.id}`)
      return e
    })
}
const typesFor = (path: string, id: string) =>
  received(path)
    .filter((e) => e.data.id === id)
    .map((e) => e.data.type)

/** Resolves once every stored event has been fanned out and every delivery attempted to its end. */
async function settled(): Promise<void> {
  const jsm = await jetstreamManager(nc)
  const positions = await new Kvm(nc).open(Buckets.webhookFanOut)
  await until('the fan-out and the deliveries to settle', async () => {
    for (const stream of [EVENTS_STREAM, OUTBOX_STREAM]) {
      if ((await positionOf(positions, stream)) < (await jsm.streams.info(stream)).state.last_seq) return false
    }
    const c = await jsm.consumers.info(DELIVERIES_STREAM, DELIVERIES_CONSUMER)
    return !c.num_pending && !c.num_ack_pending
  })
}

async function newSession(body: Record<string, unknown> = {}, agent: Record<string, unknown> = {}) {
  const { agent: a, env: e } = await agentAndEnv(client, { model: MODEL, ...agent })
  return client.beta.sessions.create({ agent: a.id, environment_id: e.id, ...body } as any)
}
const say = (text: string) => ({ type: 'user.message', content: [{ type: 'text', text }] })
async function turn(id: string, text = 'hello') {
  const stream = await client.beta.sessions.events.stream(id)
  await client.beta.sessions.events.send(id, { events: [say(text)] } as any)
  await collect(stream, isIdle)
}

t.test('each moment of a session makes its event, thin, signed and delivered once settled', async (t) => {
  await endpoint('/all', ALL)
  const s = await newSession()
  await turn(s.id)
  await client.beta.sessions.update(s.id, { title: 'renamed' } as any)
  await client.beta.sessions.archive(s.id)
  await client.beta.sessions.delete(s.id)
  await settled()
  const types = typesFor('/all', s.id)
  t.same([...new Set(types)].sort(), [
    'session.archived',
    'session.deleted',
    'session.status_idled',
    'session.status_run_started',
    'session.status_scheduled',
    'session.status_terminated',
    'session.updated',
  ])
  for (const e of received('/all').filter((x) => x.data.id === s.id)) {
    t.same(Object.keys(e), ['type', 'id', 'created_at', 'data'], 'thin: no organization id, nothing more')
    t.same(Object.keys(e.data), ['type', 'id', 'workspace_id'])
    t.match(e, { type: 'event', id: /^whe_[0-9A-Z]{26}$/, data: { id: s.id, workspace_id: WORKSPACE_ID } })
    t.ok(Number.isFinite(Date.parse(e.created_at)))
  }
  const ids = received('/all').map((e) => e.id)
  t.equal(new Set(ids).size, ids.length, 'one event per moment')

  // Created with its first input: it runs at once, and is never "scheduled".
  const direct = await newSession({ initial_events: [say('go')] })
  await until('the running session to idle', async () => (await client.beta.sessions.retrieve(direct.id)).status === 'idle')
  await settled()
  t.notOk(typesFor('/all', direct.id).includes('session.status_scheduled'), 'no scheduled event for a session created running')
  t.ok(typesFor('/all', direct.id).includes('session.status_run_started'))
})

t.test('the budget pausing a turn is session.budget_reached', async (t) => {
  await endpoint('/budget', ['session.budget_reached'])
  const s = await newSession({ budget: { type: 'limit', max_list_cost: { amount: '1', currency: 'USD' } } }, { tools: [{ type: 'agent_toolset_20260401' }] })
  model.enqueue({ steps: [{ type: 'tool_use', name: 'bash', input: { command: 'echo spent' } }], usage: { input_tokens: 10_000, output_tokens: 0 } })
  await turn(s.id, 'spend')
  await settled()
  t.same(typesFor('/budget', s.id), ['session.budget_reached'])
})

t.test("a coordinator's threads: created, idled and archived, naming the thread beside the session", async (t) => {
  await endpoint('/threads', ['session.thread_created', 'session.thread_idled', 'session.thread_terminated'])
  const member = await client.beta.agents.create({ name: 'member', model: MODEL, system: 'MEMBER' } as any)
  const s = await newSession({}, { system: 'LEAD', multiagent: { type: 'coordinator', agents: [member.id] } })
  let lead = 0
  model.setHandler((req) => {
    if (req.body.system === 'MEMBER') return { steps: [{ type: 'text', text: 'done' }] }
    if (req.body.system !== 'LEAD') return undefined
    return ++lead === 1
      ? { steps: [{ type: 'tool_use', name: 'send_to_agent', input: { agent: 'member', message: 'go' } }] }
      : { steps: [{ type: 'text', text: 'ok' }] }
  })
  t.teardown(() => model.setHandler(undefined))
  await turn(s.id)
  const child = (await client.beta.sessions.threads.list(s.id)).data[1]!
  await client.beta.sessions.threads.archive(child.id, { session_id: s.id })
  await settled()
  const got = received('/threads').filter((e) => e.data.id === s.id)
  t.same(
    got.map((e) => e.data.type),
    ['session.thread_created', 'session.thread_idled', 'session.thread_terminated'],
    'each once: the copies on the session, not the originals on the thread',
  )
  for (const e of got) t.same(e.data, { type: e.data.type, id: s.id, workspace_id: WORKSPACE_ID, session_thread_id: child.id })
})

t.test('membership is fixed when the event happens: no backfill, nothing while disabled, types as they were', async (t) => {
  const s = await newSession()
  const rename = (title: string) => client.beta.sessions.update(s.id, { title } as any)
  const titles = (path: string) =>
    received(path)
      .filter((e) => e.data.id === s.id && e.data.type === 'session.updated')
      .map((e) => e.id)
  await endpoint('/steady', ['session.updated'])
  const toggled = await endpoint('/toggled', ['session.updated'])
  const retyped = await endpoint('/retyped', ['session.updated'])
  await rename('one')
  await settled()
  const [one] = titles('/steady')
  t.ok(one)
  t.same(titles('/toggled'), [one])
  t.same(titles('/retyped'), [one])

  await updateEndpoint(toggled, { status: 'disabled' })
  await rename('two')
  await settled()
  t.same(titles('/toggled'), [one], 'nothing while disabled')

  await endpoint('/later', ['session.updated'])
  await updateEndpoint(toggled, { status: 'enabled' })
  await updateEndpoint(retyped, { event_types: ['session.archived'] })
  await rename('three')
  await settled()
  const steady = titles('/steady')
  t.equal(steady.length, 3)
  t.same(titles('/later'), [steady[2]], 'created later: only what came after')
  t.same(titles('/toggled'), [one, steady[2]], 'enabled again: what came after, nothing queued from before')
  t.same(titles('/retyped'), steady.slice(0, 2), 'unsubscribed from the type: nothing after')
  await client.beta.sessions.archive(s.id)
  await settled()
  t.same(typesFor('/retyped', s.id).sort(), ['session.archived', 'session.updated', 'session.updated'], 'and what it subscribed to instead')
})
