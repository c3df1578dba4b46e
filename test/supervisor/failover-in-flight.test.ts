import t from 'tap'
import { connect } from '@nats-io/transport-node'
import '../helpers/keepalive.js'
import { newId } from '../../protocol/ids.js'
import { startNats } from '../helpers/nats.js'
import { hostOf, placementOf } from '../helpers/placement.js'
import { clientFor, logLines, startTroupe, type TroupeProcess } from '../helpers/troupe.js'
import { until } from '../helpers/wait.js'

// Requests that reach a session's owner as it fails: one in flight to a paused owner is answered by the host that
// takes over instead of waiting out the gateway's 15 s actor timeout; after a SIGKILL, the first request that finds
// the partition unsubscribed starts the takeover. The client here never retries and gives up at 10 s, which only an
// answer from the new owner beats (the takeover itself needs the paused owner's heartbeat to expire: 2 s).

const nats = await startNats()
const procs: TroupeProcess[] = []
t.teardown(() => {
  for (const p of procs) {
    try {
      process.kill(p.proc.pid!, 'SIGCONT')
    } catch {}
    p.killNow()
  }
  nats.stopNow()
})
const nc = await connect({ servers: nats.url })
t.teardown(() => void nc.close())
const ownerOf = await placementOf(nc, 'session')

const a = await startTroupe({ natsUrl: nats.url })
const b = await startTroupe({ natsUrl: nats.url })
procs.push(a, b)
const setupClient = clientFor(b.url, { maxRetries: 6 })
await until('both hosts own session partitions', async () => {
  const seen = new Set<string | undefined>()
  for (let i = 0; i < 32; i++) seen.add(await ownerOf(newId('sesn')))
  return seen.has(hostOf(a)) && seen.has(hostOf(b))
})
const agent = await setupClient.beta.agents.create({ name: 'in-flight', model: 'claude-sonnet-4-5' })
const environment = await setupClient.beta.environments.create({ name: 'in-flight' })

/** A session owned by `owner` (created until one lands there). */
async function sessionOn(owner: TroupeProcess): Promise<string> {
  for (;;) {
    const s = await setupClient.beta.sessions.create({ agent: agent.id, environment_id: environment.id } as never)
    if ((await ownerOf(s.id)) === hostOf(owner)) return s.id
  }
}

t.test('a read and an update in flight to a paused owner are answered by the host that takes over', async (t) => {
  const ids = [await sessionOn(a), await sessionOn(a)]
  const client = clientFor(b.url, { maxRetries: 0 })
  process.kill(a.proc.pid!, 'SIGSTOP')
  const [read, update] = await Promise.all([
    client.beta.sessions.retrieve(ids[0]!, {}, { timeout: 10_000 }),
    client.beta.sessions.update(ids[1]!, { metadata: { moved: 'yes' } }, { timeout: 10_000 }),
  ])
  t.equal(read.id, ids[0])
  t.equal(update.metadata.moved, 'yes')
  t.equal(await ownerOf(ids[0]!), hostOf(b), 'the session moved to the host that answered')
  process.kill(a.proc.pid!, 'SIGCONT')
  // Back, the paused host finds its partitions taken and writes nothing: the update is stored once.
  await until('the resumed host dropped what moved on', () => logLines(a).some((l) => String(l.msg).startsWith('partitions changed')))
  const events = []
  for await (const e of setupClient.beta.sessions.events.list(ids[1]!)) events.push(e)
  t.equal(events.filter((e) => e.type === 'session.updated').length, 1, 'one session.updated')
})

t.test('after a SIGKILL, a request to the dead owner is answered without a retry by the client', async (t) => {
  const id = await sessionOn(b)
  const client = clientFor(a.url, { maxRetries: 0 })
  await b.kill()
  const s = await client.beta.sessions.retrieve(id, {}, { timeout: 10_000 })
  t.equal(s.id, id)
  await until('a saw its peer gone', () => logLines(a).some((l) => String(l.msg).startsWith('host gone')))
  t.pass('taken over once its connection was seen gone')
})
