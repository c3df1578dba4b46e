import t from 'tap'
import { connect } from '@nats-io/transport-node'
import { Kvm } from '@nats-io/kv'
import { workKey } from '../../actors/kit/work-marks.js'
import { Buckets } from '../../protocol/subjects.js'
import { agentAndEnv, collect, isIdle, sessionStack, until } from './_helpers.js'

// The work marker (`work.<id>` in the sessions bucket) tells a host taking a partition over which sessions to
// resume. It is written before a session's first input is stored and stays while the session is in memory, so a
// session in use pays no marker write per turn; it goes when the session leaves memory (idle 1 s here).

const s = await sessionStack({ TROUPE_SESSION_IDLE_MS: '1000' })
const { client, model } = s
const nc = await connect({ servers: s.nats.url })
t.teardown(() => nc.close())
const sessions = await new Kvm(nc).open(Buckets.sessions)
const marked = async (id: string) => (await sessions.get(workKey(id)))?.operation === 'PUT'

async function turn(sessionId: string, text: string) {
  const stream = await client.beta.sessions.events.stream(sessionId)
  model.enqueue({ steps: [{ type: 'text', text: `re: ${text}` }] })
  await client.beta.sessions.events.send(sessionId, { events: [{ type: 'user.message', content: [{ type: 'text', text }] }] } as any)
  await collect(stream, (e) => isIdle(e) && e.stop_reason?.type === 'end_turn')
}

t.test('the marker stays across turns while the session is in memory, and goes when it leaves', async (t) => {
  const { agent, env } = await agentAndEnv(client)
  const session = await client.beta.sessions.create({ agent: agent.id, environment_id: env.id } as any)
  t.notOk(await marked(session.id), 'a new session has no marker')

  await turn(session.id, 'one')
  t.ok(await marked(session.id), 'marked after the first turn, while the session is in memory')
  const revision = (await sessions.get(workKey(session.id)))!.revision
  await turn(session.id, 'two')
  t.equal((await sessions.get(workKey(session.id)))!.revision, revision, 'the second turn wrote no marker')

  await until('the marker goes once the session leaves memory', async () => !(await marked(session.id)), 15_000)
  t.equal((await client.beta.sessions.retrieve(session.id)).status, 'idle', 'the record it leaves says idle')

  await turn(session.id, 'three')
  t.ok(await marked(session.id), 'the next turn after it left memory marks it again')
  const all: any[] = []
  for await (const e of client.beta.sessions.events.list(session.id, { limit: 1000 } as any)) all.push(e)
  t.equal(all.filter((e) => e.type === 'agent.message').length, 3, 'three turns answered')
  t.notOk(
    all.some((e) => e.type === 'session.status_rescheduled'),
    'the session rebuilt from its history after leaving memory found nothing left open',
  )
})
