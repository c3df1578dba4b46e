import { readFileSync } from 'node:fs'
import https from 'node:https'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import Anthropic from '@anthropic-ai/sdk'
import { jetstream } from '@nats-io/jetstream'
import { connect } from '@nats-io/transport-node'
import t from 'tap'
import { enqueueDelivery } from '../../actors/webhook/deliveries.js'
import { startNats } from '../helpers/nats.js'
import { raw, startTroupe, type TroupeProcess } from '../helpers/troupe.js'
import { until } from '../helpers/wait.js'
import { keyringFile, newKey } from '../vaults/_helpers.js'
import { eventOf } from './_helpers.js'

/**
 * Deliveries run in `troupe orchestrate` (with the keyring both roles read), to an HTTPS receiver reached through
 * TROUPE_WEBHOOK_DEV_HOSTS (which the start-up output names); without a keyring it says it delivers nothing.
 */

const CERT = fileURLToPath(new URL('../fixtures/webhook-receiver.crt', import.meta.url))
const cert = readFileSync(CERT)
const key = readFileSync(new URL('../fixtures/webhook-receiver.key', import.meta.url))
const got: Array<{ body: string; headers: Record<string, string> }> = []
const server = https.createServer({ cert, key }, (req, res) => {
  let body = ''
  req.on('data', (c) => (body += c))
  req.on('end', () => {
    got.push({ body, headers: req.headers as Record<string, string> })
    res.writeHead(200).end()
  })
})
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
const port = (server.address() as AddressInfo).port
const nats = await startNats()
const keyring = keyringFile([{ id: 'k1', key: newKey() }])
const procs: TroupeProcess[] = []
t.teardown(() => {
  for (const p of procs) p.killNow()
  nats.stopNow()
  server.close()
})
const env = { TROUPE_VAULT_KEYRING_FILE: keyring }
const serve = await startTroupe({ natsUrl: nats.url, env })
procs.push(serve)

t.test('an orchestrator delivers, signed, through the development host mapping it names', async (t) => {
  const orch = await startTroupe({
    role: 'orchestrate',
    natsUrl: nats.url,
    env: { ...env, TROUPE_WEBHOOK_DEV_HOSTS: `hooks.example.test=127.0.0.1:${port}`, NODE_EXTRA_CA_CERTS: CERT },
  })
  procs.push(orch)
  // The start-up block follows the ready line, and log lines come in batches: waited for, not assumed.
  await until('the start-up block', () => /webhooks\s+/.test(orch.stdout()))
  t.match(orch.stdout(), /webhooks\s+delivered from here \(TROUPE_WEBHOOK_DEV_HOSTS: hooks\.example\.test to loopback\)/)
  await until('the warning', () => /TROUPE_WEBHOOK_DEV_HOSTS is set/.test(orch.logs()))
  const H = { 'x-api-key': 'k', 'anthropic-version': '2023-06-01' }
  const e = (await raw(serve.url, 'POST', '/v1/webhooks', { url: 'https://hooks.example.test/in', event_types: ['session.status_idled'] }, H)).json
  const nc = await connect({ servers: nats.url })
  t.teardown(() => nc.close())
  const { id, body, bytes } = eventOf()
  await enqueueDelivery(jetstream(nc), e.id, id, bytes)
  const g = await until('the delivery', () => got.find((x) => x.headers['webhook-id'] === id))
  t.equal(g.body, body)
  t.match((new Anthropic({ apiKey: 'x', webhookKey: e.signing_secret }) as any).beta.webhooks.unwrap(g.body, { headers: g.headers }), { id })
})

t.test('without a keyring an orchestrator says it delivers nothing; a malformed dev mapping stops it', async (t) => {
  const bare = await startTroupe({ role: 'orchestrate', natsUrl: nats.url })
  procs.push(bare)
  await until('the start-up block', () => /webhooks\s+/.test(bare.stdout()))
  t.match(bare.stdout(), /webhooks\s+not delivered \(no keyring\)/)
  await t.rejects(
    startTroupe({ role: 'orchestrate', natsUrl: nats.url, env: { ...env, TROUPE_WEBHOOK_DEV_HOSTS: 'hooks.example.test=10.0.0.1:443' } }),
    /TROUPE_WEBHOOK_DEV_HOSTS must be host=address:port or host=http:\/\/address:port items, each address on loopback/,
  )
})
