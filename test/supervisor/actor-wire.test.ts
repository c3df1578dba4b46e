import t from 'tap'
import { connect } from '@nats-io/transport-node'
import { decode, encode } from '../../protocol/codec.js'
import type { ActorReply, ActorRequest } from '../../protocol/envelope.js'
import { actorSubject, partitionedSubject } from '../../protocol/subjects.js'
import { stack } from '../helpers/stack.js'
import { agentAndEnv } from '../sessions/_helpers.js'

// The actor wire as any NATS client sees it (`troupe sub` shows it): a real `troupe serve` answering raw requests that
// the gateway never sends, since it mints every new id itself and encodes every request with the codec.

const s = await stack()
const nc = await connect({ servers: s.nats.url })
t.teardown(() => void nc.close())

const ask = async (subject: string, data: Uint8Array) => decode<ActorReply>((await nc.request(subject, data, { timeout: 10_000 })).data)

t.test('bytes that are not a request: a 500 undecodable_request reply, and the host serves on', async (t) => {
  const { agent } = await agentAndEnv(s.client)
  for (const [subject, what] of [
    [actorSubject('agent', 'list'), 'an op placed on any host'],
    [partitionedSubject('agent', agent.id, 'get'), 'an op placed on the owner'],
  ] as const) {
    // 0xc1 is the one byte msgpack never uses.
    const reply = await ask(subject, new Uint8Array([0xc1, 0x00, 0xff]))
    t.same(reply, { ok: false, error: { status: 500, type: 'api_error', message: 'Undecodable actor request', reason: 'undecodable_request' } }, what)
  }
  t.equal((await s.client.beta.agents.retrieve(agent.id)).id, agent.id, 'the host still serves')
})

t.test('a create naming a session that exists: 409 session_exists, and the session is untouched', async (t) => {
  const { agent, env } = await agentAndEnv(s.client)
  const session = await s.client.beta.sessions.create({ agent: agent.id, environment_id: env.id, title: 'first' } as any)
  // The gateway mints a fresh id for every create (or one from the Idempotency-Key, which finds the first): only a
  // second writer on the wire can name one that is taken.
  const req: ActorRequest = {
    op: 'create',
    rid: 'req_actorwire1',
    params: { session_id: session.id },
    query: {},
    body: { agent: agent.id, environment_id: env.id, title: 'second' },
  }
  const reply = await ask(partitionedSubject('session', session.id, 'create'), encode(req))
  t.same(reply, {
    ok: false,
    error: { status: 409, type: 'conflict_error', message: `Session ${session.id} already exists`, reason: 'session_exists' },
  })
  const now = await s.client.beta.sessions.retrieve(session.id)
  t.equal(now.title, 'first', 'the first create stands')
  t.equal(now.status, 'idle')
  // The environment the refused create took for a moment was given back: deleting it waits only for the session.
  await s.client.beta.sessions.delete(session.id)
  await s.client.beta.environments.delete(env.id)
  t.pass('the environment holds no reference from the refused create')
})
