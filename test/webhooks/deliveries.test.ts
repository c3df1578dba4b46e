import { readFileSync } from 'node:fs'
import https from 'node:https'
import type { AddressInfo } from 'node:net'
import Anthropic from '@anthropic-ai/sdk'
import { jetstream, jetstreamManager } from '@nats-io/jetstream'
import { Kvm } from '@nats-io/kv'
import { connect } from '@nats-io/transport-node'
import pino from 'pino'
import t from 'tap'
import { actorClient } from '../../actors/kit/client.js'
import { loadKeyring } from '../../actors/kit/keyring.js'
import { jitteredAfter, WEBHOOK_PAUSE_MS, webhookRetry } from '../../actors/kit/retry-policy.js'
import { actorWire } from '../../actors/kit/wire.js'
import {
  DeliveryWorker,
  type DeliveryRecord,
  type EndpointHealth,
  enqueueDelivery,
  healthKey,
  RECORD_MAX_AGE_MS,
  RECORDS_BUCKET,
} from '../../actors/webhook/deliveries.js'
import { decode } from '../../protocol/codec.js'
import { WebhookKind } from '../../protocol/ops/webhook.js'
import { Buckets, OUTBOX_STREAM } from '../../protocol/subjects.js'
import { OUTBOX_MAX_AGE_MS } from '../../actors/kit/outbox.js'
import { stack } from '../helpers/stack.js'
import { raw } from '../helpers/troupe.js'
import { until } from '../helpers/wait.js'
import { keyringFile, newKey } from '../vaults/_helpers.js'
import { eventOf } from './_helpers.js'

/**
 * Delivery attempts (actors/webhook/deliveries.ts) from the work queue to a local HTTPS receiver, each verified with
 * the official client's `unwrap()`: a 2xx acknowledges; failures come back after pauses within 5–120 s (asked of a
 * pause function the test scales down) until 3 attempts; a redirect disables the endpoint and fails what is pending
 * for it; a disabled endpoint gets nothing; a rotated secret signs the attempts claimed after it; a slow receiver does
 * not hold another endpoint's deliveries.
 */

const cert = readFileSync(new URL('../fixtures/webhook-receiver.crt', import.meta.url))
const key = readFileSync(new URL('../fixtures/webhook-receiver.key', import.meta.url))
const keyring = keyringFile([{ id: 'k1', key: newKey() }])
const s = await stack({ env: { TROUPE_VAULT_KEYRING_FILE: keyring } })
const H = { 'x-api-key': 'k', 'anthropic-version': '2023-06-01' }

/** What the receiver does for each path: a status, or hang (never answer). */
const answers = new Map<string, Array<number | 'hang'>>()
const got: Array<{ path: string; headers: Record<string, string>; body: string; at: number }> = []
const server = https.createServer({ cert, key }, (req, res) => {
  let body = ''
  req.on('data', (c) => (body += c))
  req.on('end', () => {
    got.push({ path: req.url ?? '', headers: req.headers as Record<string, string>, body, at: Date.now() })
    const queue = answers.get(req.url ?? '') ?? []
    const a = queue.length > 1 ? queue.shift()! : (queue[0] ?? 200)
    if (a === 'hang') return
    if (a >= 300 && a < 400) res.writeHead(a, { location: 'https://hooks.example.test/elsewhere' }).end()
    else res.writeHead(a).end()
  })
})
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
const port = (server.address() as AddressInfo).port

const nc = await connect({ servers: s.nats.url })
const js = jetstream(nc)
const jsm = await jetstreamManager(nc)
const kvm = new Kvm(js)
const log = pino({ level: 'warn' })
const client = actorClient({ wire: actorWire(nc), local: () => undefined })
const pauses: number[] = []
const worker = new DeliveryWorker({
  js,
  endpoints: await kvm.open(Buckets.webhooks),
  records: await kvm.create(RECORDS_BUCKET, { ttl: RECORD_MAX_AGE_MS }),
  keyring: loadKeyring(keyring),
  disable: async (endpoint, reason) => void (await client.call(WebhookKind.ops.disable, { id: endpoint, body: { reason } })),
  post: { resolve: async () => ['127.0.0.1'], devHosts: new Map([['hooks.example.test', { address: '127.0.0.1', port }]]), ca: cert, timeoutMs: 1500 },
  log,
  pauseAfter: (n) => {
    const ms = jitteredAfter(webhookRetry, n, WEBHOOK_PAUSE_MS)
    pauses.push(ms)
    return Math.round(ms / 100)
  },
})
await worker.start({ jsm, replicas: 1, lowerReplicas: false, log })
t.teardown(async () => {
  await worker.stop()
  await nc.close()
  server.close()
})

async function endpoint(path: string, events = ['session.status_idled']) {
  const r = await raw(s.url, 'POST', '/v1/webhooks', { url: `https://hooks.example.test${path}`, event_types: events }, H)
  if (r.status !== 200) throw new Error(r.text)
  return r.json as { id: string; signing_secret: string }
}

async function deliver(endpointId: string) {
  const e = eventOf()
  await enqueueDelivery(js, endpointId, e.id, e.bytes)
  return e
}

const records = await kvm.open(RECORDS_BUCKET)
const recordOf = async (e: string, ev: string) => {
  const r = await records.get(`${e}.${ev}`)
  const v = r?.operation === 'PUT' ? decode<DeliveryRecord | { skipped: number }>(r.value) : undefined
  return v && 'result' in v ? v : undefined
}
const at = (path: string) => got.filter((g) => g.path === path)
const unwrap = (secret: string, g: { body: string; headers: Record<string, string> }) =>
  (new Anthropic({ apiKey: 'x', webhookKey: secret }) as any).beta.webhooks.unwrap(g.body, { headers: g.headers })

t.test('a 2xx delivers the exact bytes, signed so that the official client verifies them', async (t) => {
  const e = await endpoint('/ok')
  const d = await deliver(e.id)
  const rec = await until('the delivery record', () => recordOf(e.id, d.id))
  t.match(rec, { result: 'delivered', attempts: 1, last: 'HTTP 200', payload: d.body })
  const [g] = at('/ok')
  t.equal(g!.body, d.body, 'the exact bytes')
  t.equal(g!.headers['webhook-id'], d.id)
  t.match(unwrap(e.signing_secret, g!), { id: d.id, data: { type: 'session.status_idled' } })
})

t.test('failures come back after bounded pauses, and a third failure drops the delivery', async (t) => {
  const e = await endpoint('/flaky')
  answers.set('/flaky', [500, 503, 200])
  const d = await deliver(e.id)
  const window = await until('the failure window opened', async () => {
    const h = await records.get(healthKey(e.id))
    return h?.operation === 'PUT' && decode<EndpointHealth>(h.value)
  })
  t.match(window, { failures: 1, last: 'HTTP 500' })
  t.match(await until('delivered on the third attempt', () => recordOf(e.id, d.id)), { result: 'delivered', attempts: 3 })
  t.notOk((await records.get(healthKey(e.id)))?.operation === 'PUT', 'the 2xx closed the failure window')
  const attempts = at('/flaky')
  t.equal(attempts.length, 3)
  t.same(new Set(attempts.map((a) => a.headers['webhook-id'])), new Set([d.id]), 'one id for every attempt')
  for (const a of attempts) t.ok(unwrap(e.signing_secret, a), 'each attempt verifies')
  t.ok(pauses.length >= 2 && pauses.every((p) => p >= 5_000 && p <= 120_000), `pauses within 5–120 s: ${pauses.join(', ')}`)

  const e2 = await endpoint('/down')
  answers.set('/down', [500])
  const d2 = await deliver(e2.id)
  t.match(await until('dropped after 3 attempts', () => recordOf(e2.id, d2.id)), { result: 'failed', attempts: 3, last: 'HTTP 500' })
  t.equal(at('/down').length, 3, 'three attempts in all')
})

t.test('a redirect disables the endpoint at once, is not followed, and fails what is pending', async (t) => {
  const e = await endpoint('/moved')
  answers.set('/moved', [302])
  const d = await deliver(e.id)
  t.match(await until('disabled', () => recordOf(e.id, d.id)), { result: 'disabled', last: /redirect \(HTTP 302\)/ })
  const shown = (await raw(s.url, 'GET', `/v1/webhooks/${e.id}`, undefined, H)).json
  t.match(shown, { status: 'disabled', disabled_reason: /redirect/ })
  t.equal(at('/elsewhere').length, 0, 'the redirect was not followed')
  const later = await deliver(e.id)
  t.match(await until('the next one dropped unattempted', () => recordOf(e.id, later.id)), { result: 'dropped', last: 'endpoint disabled' })
  t.equal(at('/moved').length, 1)
})

t.test('a host name resolving to a non-public address disables the endpoint, unattempted', async (t) => {
  // Not a development host: the test's resolver answers 127.0.0.1 for it, as DNS rebinding to loopback would.
  const r = await raw(s.url, 'POST', '/v1/webhooks', { url: 'https://inside.example.test/x', event_types: ['session.status_idled'] }, H)
  const d = await deliver(r.json.id)
  t.match(await until('disabled', () => recordOf(r.json.id, d.id)), { result: 'disabled', last: /127\.0\.0\.1/ })
  const shown = (await raw(s.url, 'GET', `/v1/webhooks/${r.json.id}`, undefined, H)).json
  t.match(shown, { status: 'disabled', disabled_reason: /127\.0\.0\.1/ })
  t.equal(at('/x').length, 0, 'nothing was sent')
})

t.test('terminal records and payloads are kept 30 days, then removed by the server', async (t) => {
  t.equal((await records.status()).ttl, RECORD_MAX_AGE_MS)
  t.equal(RECORD_MAX_AGE_MS, 30 * 24 * 3600_000)
  t.equal((await jsm.streams.info(OUTBOX_STREAM)).config.max_age, OUTBOX_MAX_AGE_MS * 1_000_000)
  t.equal(OUTBOX_MAX_AGE_MS, RECORD_MAX_AGE_MS)
})

t.test('a rotated secret signs the attempts claimed after the rotation', async (t) => {
  const e = await endpoint('/rotate')
  const r = await raw(s.url, 'POST', `/v1/webhooks/${e.id}/regenerate_signing_secret`, undefined, H)
  const d = await deliver(e.id)
  await until('delivered', () => recordOf(e.id, d.id))
  const [g] = at('/rotate')
  t.ok(unwrap(r.json.signing_secret, g!), 'verifies with the new secret')
  t.throws(() => unwrap(e.signing_secret, g!), 'not with the old one')
})

t.test('a receiver that never answers holds only its own deliveries', async (t) => {
  const slow = await endpoint('/slow')
  answers.set('/slow', ['hang'])
  const fast = await endpoint('/fast')
  for (let i = 0; i < 6; i++) await deliver(slow.id)
  const t0 = Date.now()
  const d = await deliver(fast.id)
  await until('the other endpoint delivered', () => recordOf(fast.id, d.id))
  t.ok(Date.now() - t0 < 1500, `delivered in ${Date.now() - t0} ms, before the slow one's attempts time out`)
})
