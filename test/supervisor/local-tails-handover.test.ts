import t from 'tap'
import { Kvm } from '@nats-io/kv'
import { connect } from '@nats-io/transport-node'
import '../helpers/keepalive.js'
import { decode } from '../../protocol/codec.js'
import { Buckets, PARTITIONS, partitionOf, partitionToken } from '../../protocol/subjects.js'
import { startFakeModelServer } from '../fakes/model-server.js'
import { startNats } from '../helpers/nats.js'
import { clientFor, startTroupe, type TroupeProcess } from '../helpers/troupe.js'
import { until } from '../helpers/wait.js'
import { reader } from '../sessions/_helpers.js'

// SSE streams fed in-process by the session's owner (its gateway and its actors in one process) while the session's
// partition is handed over, mid-turn, to a host that joins: each stream goes on over NATS and carries every stored
// event of the turn once, in the history's order, through to its idle on the new owner.

t.setTimeout(180_000)

const SESSIONS = 12
const model = await startFakeModelServer()
const nats = await startNats()
const procs: TroupeProcess[] = []
t.teardown(() => {
  for (const p of procs) p.killNow()
  nats.stopNow()
  void model.close()
})
const nc = await connect({ servers: nats.url })
t.teardown(() => void nc.close())
const leases = await new Kvm(nc).open(Buckets.placement)
const env = { TROUPE_MODEL_BASE_URL: model.url, ANTHROPIC_API_KEY: 'k', TROUPE_MODEL_RETRY_BASE_MS: '20' }

const hostOf = (p: TroupeProcess) => /^\s+host\s+(host_[A-Za-z0-9]+)/m.exec(p.stdout())?.[1]
async function ownerOf(sessionId: string): Promise<string | undefined> {
  const e = await leases.get(`session.${partitionToken(partitionOf(sessionId))}`)
  return e && e.operation === 'PUT' ? decode<{ host: string }>(e.value).host : undefined
}
async function owned(host: string): Promise<number> {
  let n = 0
  for await (const k of await leases.keys('session.>')) {
    const e = await leases.get(k)
    if (e?.operation === 'PUT' && decode<{ host: string }>(e.value).host === host) n++
  }
  return n
}

t.test('a hand-over mid-turn: streams fed in-process go on over NATS, every event once, in order', async (t) => {
  const a = await startTroupe({ natsUrl: nats.url, env })
  procs.push(a)
  await until('the first host to own every partition', async () => (await owned(hostOf(a)!)) === PARTITIONS, 30_000, 50)
  const client = clientFor(a.url, { maxRetries: 6 })
  const agent = await client.beta.agents.create({ name: 'handover', model: 'claude-sonnet-4-5' } as any)
  const environment = await client.beta.environments.create({ name: 'handover' })
  const sessions = await Promise.all(
    Array.from({ length: SESSIONS }, () => client.beta.sessions.create({ agent: agent.id, environment_id: environment.id } as any)),
  )
  // Every turn's first request hangs until its owner lets it go; the retry on the new owner answers.
  const before = model.requests.length
  model.enqueue(...sessions.map(() => ({ hang: true })), ...sessions.map(() => ({ steps: [{ type: 'text' as const, text: 'answered after the move' }] })))
  const streams = await Promise.all(sessions.map(async (s) => reader(await client.beta.sessions.events.stream(s.id))))
  for (const s of sessions) {
    await client.beta.sessions.events.send(s.id, { events: [{ type: 'user.message', content: [{ type: 'text', text: 'go' }] }] } as any)
  }
  await model.waitForRequests(before + SESSIONS)

  const b = await startTroupe({ natsUrl: nats.url, env })
  procs.push(b)
  await until('the partitions to split', async () => (await owned(hostOf(b)!)) === PARTITIONS / 2, 60_000, 50)
  const moved: number[] = []
  for (const [i, s] of sessions.entries()) if ((await ownerOf(s.id)) === hostOf(b)) moved.push(i)
  t.ok(moved.length > 0, `${moved.length} of ${SESSIONS} sessions moved to the new host`)

  for (const i of moved) {
    const id = sessions[i]!.id
    const seen = await streams[i]!.next((e) => e.type === 'session.status_idle', 60_000)
    const history: any[] = []
    for await (const e of client.beta.sessions.events.list(id, { limit: 1000 } as any)) history.push(e)
    t.same(
      seen.map((e) => e.id),
      history.map((e) => e.id),
      `${id}: the stream carried the history, each event once, in order`,
    )
    t.ok(
      seen.some((e) => e.type === 'session.status_rescheduled'),
      'the turn was carried on by the new owner',
    )
    t.equal(seen.filter((e) => e.type === 'agent.message').at(-1)?.content[0].text, 'answered after the move')
  }
})
