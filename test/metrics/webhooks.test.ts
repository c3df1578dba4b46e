import t from 'tap'
import { startFakeModelServer } from '../fakes/model-server.js'
import '../helpers/keepalive.js'
import { startNats } from '../helpers/nats.js'
import { sampleSum } from '../helpers/prom-text.js'
import { clientFor, raw, startTroupe } from '../helpers/troupe.js'
import { until } from '../helpers/wait.js'
import { deliveringEnv, startReceiver } from '../webhooks/_helpers.js'
import { highCardinality, scrape } from './_helpers.js'

// Webhook deliveries counted by outcome, with their lag: a `troupe start` (it delivers) with the keyring, one endpoint
// whose receiver answers 200 and one whose receiver answers 500 (its attempts come back later: `retrying`).

const nats = await startNats()
t.teardown(() => nats.stopNow())

t.test('deliveries by outcome, and their lag', async (t) => {
  const receiver = await startReceiver((r) => (r.path.startsWith('/fails') ? 500 : 200))
  const model = await startFakeModelServer()
  t.teardown(async () => {
    receiver.close()
    await model.close()
  })
  const troupe = await startTroupe({ role: 'start', natsUrl: nats.url, env: deliveringEnv(receiver, model) })
  t.teardown(() => troupe.killNow())
  const H = { 'x-api-key': 'k', 'anthropic-version': '2023-06-01' }
  for (const url of ['https://hooks.example.test/ok', 'https://hooks.example.test/fails']) {
    const made = await raw(troupe.url, 'POST', '/v1/webhooks', { url, event_types: ['agent.created'] }, H)
    t.equal(made.status, 200, made.text)
  }
  await clientFor(troupe.url, { maxRetries: 3 }).beta.agents.create({ name: 'a', model: 'claude-sonnet-4-5' } as any)
  const f = await until(
    'one delivered, one failed attempt',
    async () => {
      const f = await scrape(troupe.url)
      const done = (outcome: string) => sampleSum(f, 'troupe_webhook_deliveries_total', { outcome }) >= 1
      return done('delivered') && done('retrying') ? f : undefined
    },
    30_000,
    100,
  )
  t.ok(sampleSum(f, 'troupe_webhook_delivery_lag_seconds_count', { outcome: 'delivered' }) >= 1)
  t.ok(sampleSum(f, 'troupe_webhook_delivery_lag_seconds_sum', { outcome: 'delivered' }) >= 0)
  t.same(highCardinality(f), [])
})
