import t from 'tap'
import { connect, headers } from '@nats-io/transport-node'
import { jetstream } from '@nats-io/jetstream'
import { EventHeaders } from '../../protocol/events.js'
import { eventsSubject } from '../../protocol/subjects.js'
import { agentAndEnv, sessionStack, until } from './_helpers.js'

// A session actor that fails mid-turn (here: its store stops answering while the model replies) is rebuilt
// by its host without any client request, and the turn ends: a session never stays `running` with nothing
// driving it.

const s = await sessionStack()
const { client, model, nats } = s

t.test('the store pauses mid-turn: the actor fails, is rebuilt once the store answers, and the turn finishes', async (t) => {
  const { agent, env } = await agentAndEnv(client)
  const session = await client.beta.sessions.create({ agent: agent.id, environment_id: env.id } as any)
  model.enqueue({ delayMs: 1000, steps: [{ type: 'text', text: 'lost in the outage' }] })
  const before = model.requests.length
  await client.beta.sessions.events.send(session.id, { events: [{ type: 'user.message', content: [{ type: 'text', text: 'go' }] }] } as any)
  await model.waitForRequests(before + 1)
  // The turn's start is stored (its status and span go out together, as the request begins): the pause hits a turn
  // in progress, which the rebuilt actor must reschedule.
  await until('the turn start is stored', async () => {
    const types: string[] = []
    for await (const e of client.beta.sessions.events.list(session.id, { limit: 1000 } as any)) types.push(e.type)
    return types.includes('span.model_request_start')
  })
  process.kill(-nats.pgid, 'SIGSTOP')
  try {
    // Longer than a JetStream publish may wait: the append of the finished response (its message, span end and idle,
    // one message) gets no answer in time, and the actor fails.
    await new Promise((r) => setTimeout(r, 7000))
  } finally {
    process.kill(-nats.pgid, 'SIGCONT')
  }
  // Nobody posts anything: the host itself must bring the session back to idle.
  await until('the session is idle again', async () => (await client.beta.sessions.retrieve(session.id)).status === 'idle', 30_000)
  const all: any[] = []
  for await (const e of client.beta.sessions.events.list(session.id, { limit: 1000 } as any)) all.push(e)
  t.equal(all.filter((e) => e.type === 'user.message').length, 1, 'the message is stored once')
  // The append that got no answer was still in the client's socket when the server paused: it may land once the
  // server resumes (the turn is then complete as it was answered), or not (the rebuilt actor finds the turn open
  // and reschedules it). Either way the turn ends once, answered.
  const answered = all.filter((e) => e.type === 'agent.message')
  const rescheduled = all.some((e) => e.type === 'session.status_rescheduled')
  t.ok(rescheduled || (answered.length === 1 && answered[0].content[0].text === 'lost in the outage'), 'the answer landed, or the turn was rescheduled')
  t.ok(answered.length >= 1, 'the turn was answered')
  t.same(all.at(-1).type, 'session.status_idle')
  const starts = all.filter((e) => e.type === 'span.model_request_start').map((e) => e.id)
  t.same(
    all.filter((e) => e.type === 'span.model_request_end').map((e) => e.model_request_start_id),
    starts,
    'every request span is closed',
  )
  await until('the rebuild logged', () => /will be rebuilt from its history/.test(s.troupe.logs()))
})

t.test('another writer slips an append in mid-turn (a paused host resuming): the owner steps down, rebuilds, and finishes the turn', async (t) => {
  const { agent, env } = await agentAndEnv(client)
  const session = await client.beta.sessions.create({ agent: agent.id, environment_id: env.id } as any)
  model.enqueue({ delayMs: 1000, steps: [{ type: 'text', text: 'fenced off' }] }, { steps: [{ type: 'text', text: 'after the rebuild' }] })
  const before = model.requests.length
  await client.beta.sessions.events.send(session.id, { events: [{ type: 'user.message', content: [{ type: 'text', text: 'go' }] }] } as any)
  await model.waitForRequests(before + 1)
  // What a host that lost the partition while paused might still write: the owner's next append is fenced off.
  const nc = await connect({ servers: nats.url })
  const h = headers()
  h.set(EventHeaders.type, '_processed')
  await jetstream(nc).publish(eventsSubject(session.id), JSON.stringify({ type: '_processed', ids: [], processed_at: new Date().toISOString() }), {
    headers: h,
  })
  await nc.close()
  // Watched through the event list, which never wakes an actor: the host alone must carry the turn on.
  let all: any[] = []
  await until(
    'the turn ends',
    async () => {
      all = []
      for await (const e of client.beta.sessions.events.list(session.id, { limit: 1000 } as any)) all.push(e)
      return all.at(-1)?.type === 'session.status_idle'
    },
    30_000,
  )
  t.same(
    all.filter((e) => e.type === 'agent.message').map((e) => e.content[0].text),
    ['after the rebuild'],
    'the fenced response was not stored; the rebuilt actor asked again',
  )
  t.ok(all.some((e) => e.type === 'session.status_rescheduled'))
  t.same(all.at(-1).stop_reason, { type: 'end_turn' })
  await until('the step-down logged', () => /session actor stepping down/.test(s.troupe.logs()))
})
