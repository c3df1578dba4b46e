import t from 'tap'
import { connect } from '@nats-io/transport-node'
import { AckPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream'
import { EventHeaders } from '../../protocol/events.js'
import { Kvm } from '@nats-io/kv'
import { sessionKey } from '../../actors/session/history/state.js'
import { Buckets, EVENTS_STREAM, eventsWildcard } from '../../protocol/subjects.js'
import { decode } from '../../protocol/codec.js'
import { agentAndEnv, collect, isIdle, sessionStack, until } from './_helpers.js'

// Events a session emits together are stored as one message (protocol/events.ts): a turn is three appends for its
// six events, and a quick turn one record write (its idle). Every reader splits the messages back: pages of any size
// in both orders, and the SSE tail resumed from any event of such a message.

// A turn's running record is due after a minute here: the quick turn below writes only its idle one, however slow
// the machine (lists show a longer turn as running: list.test.ts).
const s = await sessionStack({ TROUPE_SESSION_RUNNING_RECORD_MS: '60000' })
const { client, model } = s
const nc = await connect({ servers: s.nats.url })
t.teardown(() => nc.close())

const { agent, env } = await agentAndEnv(client)
const session = await client.beta.sessions.create({ agent: agent.id, environment_id: env.id } as any)
// Every write of the session's record during the turn, in order (a watch delivers them all, whatever the history kept).
const records = await new Kvm(nc).open(Buckets.sessions)
const recordWrites: string[] = []
const watch = await records.watch({ key: sessionKey(session.id), include: 'updates' })
void (async () => {
  for await (const e of watch) recordWrites.push(e.operation === 'PUT' ? decode<{ session: { status: string } }>(e.value).session.status : e.operation)
})()
t.teardown(() => watch.stop())
const stream = await client.beta.sessions.events.stream(session.id)
model.enqueue({ steps: [{ type: 'text', text: 'together' }] })
await client.beta.sessions.events.send(session.id, { events: [{ type: 'user.message', content: [{ type: 'text', text: 'go' }] }] } as any)
await collect(stream, isIdle)

const listAll = async (query: Record<string, unknown>) => {
  const got: any[] = []
  for await (const e of client.beta.sessions.events.list(session.id, query as any)) got.push(e)
  return got
}
const all = await listAll({ limit: 1000 })
const TURN = ['user.message', 'session.status_running', 'span.model_request_start', 'agent.message', 'span.model_request_end', 'session.status_idle']

t.test('a turn is three stored messages: the input, the start, the answer', async (t) => {
  t.same(
    all.map((e) => e.type),
    TURN,
  )
  const jsm = await jetstreamManager(nc)
  const info = await jsm.consumers.add(EVENTS_STREAM, { filter_subject: eventsWildcard(session.id), ack_policy: AckPolicy.None, mem_storage: true })
  const consumer = await jetstream(nc).consumers.get(EVENTS_STREAM, info.name)
  const messages: string[][] = []
  for (let i = 0; i < info.num_pending; i++) {
    const m = await consumer.next({ expires: 5000 })
    if (!m) break
    messages.push(m.headers!.get(EventHeaders.type).split(','))
  }
  t.same(messages, [TURN.slice(0, 1), TURN.slice(1, 3), TURN.slice(3)])
})

t.test('a quick turn writes its record once, when it is over', async (t) => {
  // Writes arrive in order: once the idle record is here, a running record written before it would be too.
  await until('the idle record', () => recordWrites.includes('idle'))
  t.same(recordWrites, ['idle'])
})

t.test('pages of every size, both orders, hand out every event once, in order', async (t) => {
  for (const limit of [1, 2, 4]) {
    t.same(
      (await listAll({ limit })).map((e) => e.id),
      all.map((e) => e.id),
      `asc, limit ${limit}`,
    )
    t.same(
      (await listAll({ limit, order: 'desc' })).map((e) => e.id),
      all.map((e) => e.id).reverse(),
      `desc, limit ${limit}`,
    )
  }
  t.same(
    (await listAll({ limit: 1, types: ['span.model_request_end', 'session.status_running'] })).map((e) => e.type),
    ['session.status_running', 'span.model_request_end'],
    'a type filter across messages of several events',
  )
})

t.test('the stream resumes after any event of a message of several', async (t) => {
  for (const i of [1, 2, 3, 4]) {
    const replay = await client.beta.sessions.events.stream(session.id, { after: all[i].id } as any)
    const rest = all.slice(i + 1)
    const got = await collect(replay, (_e, seen) => seen.length === rest.length)
    t.same(
      got.map((e) => e.id),
      rest.map((e) => e.id),
      `after ${all[i].type}`,
    )
  }
})
