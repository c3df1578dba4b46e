import t from 'tap'
import { connect } from '@nats-io/transport-node'
import { DiscardPolicy, jetstreamManager } from '@nats-io/jetstream'
import { EVENTS_STREAM } from '../../protocol/subjects.js'
import { raw } from '../helpers/troupe.js'
import { agentAndEnv, collect, isIdle, sessionStack, until } from './_helpers.js'

// The events stream refusing a write, by a real limit of the real nats-server: an operator's cap on the stream
// (`max_msgs` with `discard: new`), reached.

const s = await sessionStack()
const nc = await connect({ servers: s.nats.url })
t.teardown(() => void nc.close())
const jsm = await jetstreamManager(nc)

const say = (text: string) => ({ events: [{ type: 'user.message', content: [{ type: 'text', text }] }] })

t.test('a full events stream: 503 history_write_failed with retry-after-ms; once there is room, the same send is stored', async (t) => {
  const { agent, env } = await agentAndEnv(s.client)
  const session = await s.client.beta.sessions.create({ agent: agent.id, environment_id: env.id } as any)
  const first = await s.client.beta.sessions.events.stream(session.id)
  await s.client.beta.sessions.events.send(session.id, say('before the cap') as any)
  await collect(first, isIdle)

  const info = await jsm.streams.info(EVENTS_STREAM)
  const config = info.config
  await jsm.streams.update(EVENTS_STREAM, { ...config, max_msgs: info.state.messages, discard: DiscardPolicy.New })
  t.teardown(() => jsm.streams.update(EVENTS_STREAM, config).then(() => undefined))

  const refused = await raw(s.url, 'POST', `/v1/sessions/${session.id}/events`, say('over the cap'))
  t.equal(refused.status, 503, refused.text)
  t.equal(refused.headers.get('retry-after-ms'), '1000')
  t.same(refused.json.error, { type: 'overloaded_error', message: 'The session history could not be written; retry shortly' })
  t.equal((await jsm.streams.info(EVENTS_STREAM)).state.messages, info.state.messages, 'nothing was stored')

  await jsm.streams.update(EVENTS_STREAM, config)
  // The refusal stopped the actor, which is rebuilt from what was stored: the official client retries a 503 meanwhile.
  const stream = await s.client.beta.sessions.events.stream(session.id)
  await until(
    'the send to be accepted',
    async () => (await raw(s.url, 'POST', `/v1/sessions/${session.id}/events`, say('with room again'))).status === 200,
    30_000,
    100,
  )
  await collect(stream, isIdle)
  const history = (await s.client.beta.sessions.events.list(session.id, { limit: 100 } as any)).data as any[]
  t.same(
    history.filter((e) => e.type === 'user.message').map((e) => e.content[0].text),
    ['before the cap', 'with room again'],
    'the refused message was not stored; the later one was, once',
  )
  t.equal((await s.client.beta.sessions.retrieve(session.id)).status, 'idle')
})
