import Anthropic from '@anthropic-ai/sdk'
import t from 'tap'
import '../helpers/keepalive.js'
import { startNats } from '../helpers/nats.js'
import { clientFor, raw, startTroupe, type TroupeProcess } from '../helpers/troupe.js'
import { until } from '../helpers/wait.js'
import { keyringFile, newKey } from '../vaults/_helpers.js'
import { startReceiver } from './_helpers.js'

/**
 * Two orchestrators share the deliveries; one is SIGKILLed while its attempts hang at the receiver. Nothing is lost:
 * its claims lapse (10 s) and the other delivers them, so every event arrives at least once (deduplicated on
 * `webhook-id`), each verified with the official client's `unwrap()`.
 */

/** While holding, the receiver answers nothing until released. */
let release: (() => void) | undefined
let held: Promise<number> | undefined
const receiver = await startReceiver(() => held ?? 200)
const nats = await startNats()
const keyring = keyringFile([{ id: 'k1', key: newKey() }])
const env = { TROUPE_VAULT_KEYRING_FILE: keyring, ...receiver.env }
const procs: TroupeProcess[] = []
t.teardown(() => {
  for (const p of procs) p.killNow()
  nats.stopNow()
  receiver.close()
})
const H = { 'x-api-key': 'k', 'anthropic-version': '2023-06-01' }

t.test('an orchestrator SIGKILLed mid-delivery loses nothing', async (t) => {
  const serve = await startTroupe({ natsUrl: nats.url, env })
  procs.push(serve)
  const [a, b] = await Promise.all([0, 1].map(() => startTroupe({ role: 'orchestrate', natsUrl: nats.url, env })))
  procs.push(a!, b!)
  const client = clientFor(serve.url, { maxRetries: 3 })
  const hook = (await raw(serve.url, 'POST', '/v1/webhooks', { url: 'https://hooks.example.test/in', event_types: ['session.updated'] }, H)).json
  const agent = await client.beta.agents.create({ name: 'a', model: 'claude-sonnet-4-5' } as any)
  const environment = await client.beta.environments.create({ name: 'e' } as any)
  const session = await client.beta.sessions.create({ agent: agent.id, environment_id: environment.id } as any)

  held = new Promise<number>((r) => (release = () => r(200)))
  const N = 20
  for (let i = 0; i < N; i++) await client.beta.sessions.update(session.id, { title: `title ${i}` } as any)
  // Each orchestrator holds at most 4 attempts to one endpoint: 8 hanging means both hold some.
  await until('both orchestrators to hold attempts', () => receiver.got.length >= 8)
  await a!.kill()
  held = undefined
  release!()

  const verifier = new Anthropic({ apiKey: 'x', webhookKey: hook.signing_secret }) as any
  // Answered: what the killed orchestrator sent got no answer to it, and counts only once delivered again.
  const delivered = () => new Set(receiver.got.filter((g) => g.answered).map((g) => verifier.beta.webhooks.unwrap(g.body, { headers: g.headers }).id))
  await until('every event delivered', () => delivered().size >= N, 60_000)
  t.equal(delivered().size, N, 'every event, deduplicated on webhook-id')
  t.ok(
    receiver.got.some((g) => !g.answered),
    'the killed orchestrator held attempts',
  )
  for (const g of receiver.got) t.equal(g.headers['webhook-id'], JSON.parse(g.body).id)
})
