import Anthropic from '@anthropic-ai/sdk'
import t from 'tap'
import { intervalAfter, jitteredAfter, WEBHOOK_PAUSE_MS, webhookRetry } from '../../actors/kit/retry-policy.js'
import { attemptHeaders, newSigningSecret } from '../../actors/webhook/signature.js'

/** Signing as the official client verifies it (`client.beta.webhooks.unwrap`), and the retry pauses' bounds. */

t.test('secrets are whsec_ and 32 random bytes; each attempt verifies with the official client', async (t) => {
  const secret = newSigningSecret()
  t.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/)
  t.equal(Buffer.from(secret.slice(6), 'base64').length, 32)
  t.not(newSigningSecret(), secret)
  const body = JSON.stringify({
    type: 'event',
    id: 'whe_01ABC',
    created_at: '2026-11-27T00:00:00Z',
    data: { type: 'session.status_idled', id: 'sesn_1', workspace_id: 'wrkspc_troupe' },
  })
  const headers = attemptHeaders(secret, 'whe_01ABC', body)
  t.equal(headers['webhook-id'], 'whe_01ABC')
  t.match(headers['webhook-timestamp'], /^\d{10}$/)
  t.match(headers['webhook-signature'], /^v1,[A-Za-z0-9+/]{43}=$/)
  const client = new Anthropic({ apiKey: 'x', webhookKey: secret } as any)
  const event = (client.beta as any).webhooks.unwrap(body, { headers })
  t.match(event, { id: 'whe_01ABC', data: { type: 'session.status_idled' } }, 'unwrap() verifies and parses it')
  t.throws(() => (client.beta as any).webhooks.unwrap(`${body} `, { headers }), 'another body does not verify')
  t.throws(() => new Anthropic({ apiKey: 'x', webhookKey: newSigningSecret() } as any).beta.webhooks.unwrap(body, { headers } as any), 'nor another secret')
})

t.test('a retry keeps the id, signs afresh with its own timestamp', async (t) => {
  const secret = newSigningSecret()
  const a = attemptHeaders(secret, 'whe_1', '{}', new Date('2026-11-27T10:00:00Z'))
  const b = attemptHeaders(secret, 'whe_1', '{}', new Date('2026-11-27T10:00:42.999Z'))
  t.equal(a['webhook-id'], b['webhook-id'])
  t.equal(Number(b['webhook-timestamp']) - Number(a['webhook-timestamp']), 42)
  t.not(a['webhook-signature'], b['webhook-signature'])
})

t.test('3 attempts; pauses jittered and always within 5–120 s', async (t) => {
  t.equal(webhookRetry.maximumAttempts, 3)
  t.equal(intervalAfter(webhookRetry, 1), 10_000)
  t.equal(intervalAfter(webhookRetry, 2), 40_000)
  for (const failures of [1, 2, 3, 4, 10]) {
    for (const r of [0, 0.25, 0.5, 0.999999]) {
      const ms = jitteredAfter(webhookRetry, failures, WEBHOOK_PAUSE_MS, () => r)
      t.ok(ms >= 5_000 && ms <= 120_000, `failure ${failures}, random ${r}: ${ms} ms`)
    }
  }
  t.equal(
    jitteredAfter(webhookRetry, 1, WEBHOOK_PAUSE_MS, () => 0),
    5_000,
    'the low end: 10 s × 0.5',
  )
  t.equal(
    jitteredAfter(webhookRetry, 2, WEBHOOK_PAUSE_MS, () => 0.5),
    40_000,
  )
  t.equal(
    jitteredAfter(webhookRetry, 5, WEBHOOK_PAUSE_MS, () => 0.9),
    120_000,
    'capped',
  )
})
