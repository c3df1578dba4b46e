// Webhook events made while NATS servers fail one after another are all delivered (at least once): on a 3-node
// cluster, the events stream's leader is SIGKILLed, then the deliveries consumer's leader, then a node is SIGSTOPped,
// back to back, while a session is updated every 100 ms and the receiver answers slowly (so deliveries are in flight
// at every fault). Every `session.updated` the history holds must reach the receiver, verified with the official
// client's `unwrap()`.
import { jetstreamManager } from '@nats-io/jetstream'
import { connect } from '@nats-io/transport-node'
import Anthropic from '@anthropic-ai/sdk'
import t from 'tap'
import '../helpers/keepalive.js'
import { DELIVERIES_CONSUMER, DELIVERIES_STREAM } from '../../actors/webhook/deliveries.js'
import { EVENTS_STREAM } from '../../protocol/subjects.js'
import { startNatsCluster } from '../helpers/nats-cluster.js'
import { clientFor, raw, startTroupe, type TroupeProcess } from '../helpers/troupe.js'
import { until } from '../helpers/wait.js'
import { keyringFile, newKey } from '../vaults/_helpers.js'
import { startReceiver } from './_helpers.js'

t.setTimeout(420_000)
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

// Slow answers keep attempts in flight (claimed, unacknowledged) when a server goes.
const receiver = await startReceiver(() => new Promise<number>((r) => setTimeout(() => r(200), 300)))
const cluster = await startNatsCluster({ size: 3 })
const keyring = keyringFile([{ id: 'k1', key: newKey() }])
const env = { TROUPE_VAULT_KEYRING_FILE: keyring, TROUPE_REPLICAS: '3', ...receiver.env }
const procs: TroupeProcess[] = []
const nc = await connect({ servers: cluster.nodes.map((n) => n.url), maxReconnectAttempts: -1, reconnectTimeWait: 250 })
t.teardown(async () => {
  for (const p of procs) p.killNow()
  await nc.close().catch(() => undefined)
  await cluster.stop()
  receiver.close()
})
const H = { 'x-api-key': 'k', 'anthropic-version': '2023-06-01' }

/** The server name leading a consumer's raft group, once it has one (bounded). */
async function consumerLeader(stream: string, consumer: string): Promise<string | undefined> {
  const jsm = await jetstreamManager(nc, { timeout: 2000, checkAPI: false })
  return until(`a leader of ${consumer}`, async () => (await jsm.consumers.info(stream, consumer).catch(() => undefined))?.cluster?.leader, 30_000, 250).catch(
    () => undefined,
  )
}

t.test('events made across stacked NATS faults all reach the receiver', async (t) => {
  const serve = await startTroupe({ natsUrl: cluster.url, env })
  procs.push(serve)
  procs.push(...(await Promise.all([0, 1].map(() => startTroupe({ role: 'orchestrate', natsUrl: cluster.url, env })))))
  const client = clientFor(serve.url, { maxRetries: 8 })
  const hook = (await raw(serve.url, 'POST', '/v1/webhooks', { url: 'https://hooks.example.test/in', event_types: ['session.updated'] }, H)).json
  const agent = await client.beta.agents.create({ name: 'a', model: 'claude-sonnet-4-5' } as any)
  const environment = await client.beta.environments.create({ name: 'e' } as any)
  const session = await client.beta.sessions.create({ agent: agent.id, environment_id: environment.id } as any)

  let updating = true
  let sent = 0
  const updates = (async () => {
    for (let i = 0; updating; i++) {
      await client.beta.sessions.update(session.id, { title: `title ${i}` } as any).then(
        () => sent++,
        () => undefined,
      )
      await sleep(100)
    }
  })()
  await until('deliveries under way', () => receiver.got.length >= 10, 60_000)
  const faults: string[] = []
  const kill = async (name: string | undefined, what: string) => {
    if (!name) return void faults.push(`${what}: no leader found`)
    const node = cluster.node(name)
    await node.kill()
    await sleep(3000)
    await node.restart()
    faults.push(`${what} (${name}) SIGKILLed and restarted`)
  }
  await kill(await cluster.streamLeader(EVENTS_STREAM), `${EVENTS_STREAM} leader`)
  await kill(await consumerLeader(DELIVERIES_STREAM, DELIVERIES_CONSUMER), 'deliveries consumer leader')
  const paused = cluster.nodes[2]!
  paused.pause()
  await sleep(8000)
  paused.resume()
  faults.push(`${paused.name} SIGSTOPped 8 s`)
  await cluster.waitStable({ streams: [EVENTS_STREAM, DELIVERIES_STREAM], timeoutMs: 60_000 })
  await sleep(2000)
  updating = false
  await updates
  t.comment(faults.join('; '))

  const history: any[] = []
  for await (const e of client.beta.sessions.events.list(session.id, { limit: 100 } as any) as AsyncIterable<any>) history.push(e)
  const made = new Set(history.filter((e) => e.type === 'session.updated').map((e) => e.id))
  t.ok(made.size >= sent, `${made.size} session.updated stored for ${sent} updates answered`)
  const verifier = new Anthropic({ apiKey: 'x', webhookKey: hook.signing_secret }) as any
  const seen = () => new Set(receiver.got.filter((g) => g.answered).map((g) => verifier.beta.webhooks.unwrap(g.body, { headers: g.headers }).id as string))
  // The ids the fan-out gives: one webhook event per stored session.updated.
  const { webhookEventId } = await import('../../actors/kit/outbox.js')
  const want = [...made].map((id) => webhookEventId('session.updated', id))
  await until('every event delivered', () => want.every((id) => seen().has(id)), 150_000, 500).catch(() => undefined)
  const got = seen()
  const missing = want.filter((id) => !got.has(id))
  t.equal(missing.length, 0, `expected ${want.length}, saw ${want.length - missing.length}`)
})
