import t from 'tap'
import Anthropic from '@anthropic-ai/sdk'
import '../helpers/keepalive.js'
import { startNats } from '../helpers/nats.js'
import { raw, settledLogLines, startTroupe } from '../helpers/troupe.js'
import { until } from '../helpers/wait.js'
import { clientWith, createKey, statusOf, troupeCli } from './_helpers.js'

// API keys through the official client on two `troupe serve` hosts of one NATS (issue 45 points 1 and 3): keys made
// with the CLI and the admin routes, 401 for wrong, revoked, rotated-away and expired keys, 403 for a read-only key
// writing, a revoke seen by the other host within a second, and a 429 the client waits out.

const nats = await startNats()
const a = await startTroupe({ natsUrl: nats.url })
const b = await startTroupe({ natsUrl: nats.url })
t.teardown(() => {
  a.killNow()
  b.killNow()
  nats.stopNow()
})
const agentsList = (url: string, key: string) => statusOf(clientWith(url, key).beta.agents.list())

t.test('open on loopback until the first key exists, then every host checks keys', async (t) => {
  await until('the start-up block', () => /^ {2}version /m.test(a.stdout()), 10_000)
  t.match(a.stdout(), /^ {2}auth +open: no API key exists yet/m, 'the banner says the server is open')
  t.equal(await agentsList(a.url, 'anything'), 200, 'any key works while none exists')
  const admin = await createKey(nats.url, ['--name', 'ops', '--scope', 'admin'])
  t.match(admin.key, /^sk-troupe-[A-Za-z0-9_-]{43}$/)
  t.match(admin.id, /^apikey_/)
  // The hosts' copies see the new key within milliseconds; until then they are still open.
  for (const url of [a.url, b.url]) await until('keys on', async () => (await agentsList(url, 'anything')) === 401, 5000)
  t.equal(await agentsList(b.url, admin.key), 200, 'the admin key works on the other host')
})

t.test('a full key, a wrong key, no key and a Bearer token', async (t) => {
  const made = await createKey(nats.url, ['--name', 'ci'])
  const client = clientWith(a.url, made.key)
  const env = await client.beta.environments.create({ name: 'keys' })
  t.match(env.id, /^env_/)
  t.equal(await statusOf(clientWith(b.url, made.key).beta.environments.retrieve(env.id)), 200)
  const wrong = await clientWith(a.url, `${made.key.slice(0, -1)}x`)
    .beta.agents.list()
    .catch((e) => e)
  t.ok(wrong instanceof Anthropic.AuthenticationError, 'a wrong key is the client AuthenticationError')
  t.equal(wrong.error?.error?.type, 'authentication_error')
  const none = await raw(a.url, 'GET', '/v1/agents')
  t.equal(none.status, 401)
  t.equal(none.json.error.type, 'authentication_error')
  const bearer = new Anthropic({ baseURL: a.url, apiKey: null, authToken: made.key, maxRetries: 0 })
  t.equal(await statusOf(bearer.beta.agents.list()), 200, 'authorization: Bearer is accepted')
  const lines = await settledLogLines(a)
  t.ok(
    lines.some((l) => l.msg === 'request' && l.key === made.id),
    'the request log line names the key',
  )
})

t.test('a read-only key reads and is refused writes with 403', async (t) => {
  const ro = await createKey(nats.url, ['--name', 'dashboards', '--read-only'])
  t.equal(ro.scope, 'read_only')
  const client = clientWith(a.url, ro.key)
  t.equal(await statusOf(client.beta.agents.list()), 200)
  const err = await client.beta.agents.create({ name: 'x', model: 'claude-sonnet-4-6' }).catch((e) => e)
  t.ok(err instanceof Anthropic.PermissionDeniedError, 'a write is the client PermissionDeniedError')
  t.equal(err.error?.error?.type, 'permission_error')
  t.match(err.error?.error?.message, /read-only/)
})

t.test('admin routes: list, create with limits, update; only for admin keys', async (t) => {
  const admin = await createKey(nats.url, ['--name', 'ops2', '--scope', 'admin'])
  const full = await createKey(nats.url, ['--name', 'app'])
  const h = { 'x-api-key': admin.key }
  const list = await raw(a.url, 'GET', '/v1/admin/api_keys', undefined, h)
  t.equal(list.status, 200)
  const listed = list.json.data.find((k: { id: string }) => k.id === full.id)
  t.ok(listed, 'the CLI-made key is listed')
  t.notOk('key' in listed, 'never the key')
  t.notOk('hash' in listed, 'never its hash')
  t.equal(listed.hint, `${full.key.slice(0, 14)}…${full.key.slice(-4)}`)
  t.equal((await raw(a.url, 'GET', '/v1/admin/api_keys', undefined, { 'x-api-key': full.key })).status, 403, 'a full key is no admin key')
  t.equal((await raw(a.url, 'GET', '/v1/admin/api_keys')).status, 401)
  const made = await raw(a.url, 'POST', '/v1/admin/api_keys', { name: 'limited', limits: { requests_per_second: 7 } }, h)
  t.equal(made.status, 200)
  t.equal(made.json.limits.requests_per_second, 7)
  t.match(made.json.key, /^sk-troupe-/)
  const bad = await raw(a.url, 'POST', '/v1/admin/api_keys', { name: 'x', scope: 'root' }, h)
  t.equal(bad.status, 400)
  t.match(bad.json.error.message, /scope/)
  const updated = await raw(a.url, 'POST', `/v1/admin/api_keys/${made.json.id}`, { limits: { burst: 3 } }, h)
  t.same([updated.json.limits.requests_per_second, updated.json.limits.burst], [7, 3])
  t.equal((await raw(a.url, 'GET', '/v1/admin/api_keys/apikey_01NOPE', undefined, h)).status, 404)
  const cli = await troupeCli(nats.url, ['keys', 'list'])
  t.equal(cli.code, 0)
  t.match(cli.stdout, new RegExp(`^${made.json.id} `, 'm'), 'troupe keys list shows the route-made key')
})

t.test('a revoke on one host is seen by the other within a second', async (t) => {
  const admin = await createKey(nats.url, ['--name', 'ops3', '--scope', 'admin'])
  const victim = await createKey(nats.url, ['--name', 'leaked'])
  await until('the key works on b', async () => (await agentsList(b.url, victim.key)) === 200, 5000)
  const revoked = await raw(a.url, 'POST', `/v1/admin/api_keys/${victim.id}/revoke`, undefined, { 'x-api-key': admin.key })
  t.equal(revoked.status, 200)
  t.ok(revoked.json.revoked_at, 'revoked_at is set')
  const t0 = performance.now()
  await until('b refuses the revoked key', async () => (await raw(b.url, 'GET', '/v1/agents', undefined, { 'x-api-key': victim.key })).status === 401, 5000, 10)
  const ms = performance.now() - t0
  t.ok(ms < 1000, `b refused it ${ms.toFixed(0)} ms after the revoke answered`)
  const again = await raw(b.url, 'GET', '/v1/agents', undefined, { 'x-api-key': victim.key })
  t.match(again.json.error.message, /revoked/)
})

t.test('rotate: the old key stops, the new one works', async (t) => {
  const k = await createKey(nats.url, ['--name', 'rotating'])
  const r = await troupeCli(nats.url, ['keys', 'rotate', k.id, '--json'])
  t.equal(r.code, 0, r.stderr)
  const rotated = JSON.parse(r.stdout)
  t.not(rotated.key, k.key)
  t.equal(rotated.id, k.id, 'the same key id')
  await until('the old key refused', async () => (await agentsList(a.url, k.key)) === 401, 5000)
  t.equal(await agentsList(a.url, rotated.key), 200)
  const revokeTwice = await troupeCli(nats.url, ['keys', 'revoke', k.id])
  t.equal(revokeTwice.code, 0)
  const rotateRevoked = await troupeCli(nats.url, ['keys', 'rotate', k.id])
  t.equal(rotateRevoked.code, 1)
  t.match(rotateRevoked.stderr, /revoked/)
  const usage = await troupeCli(nats.url, ['keys', 'create'])
  t.equal(usage.code, 2, 'create without --name is a usage error')
  t.match(usage.stderr, /name/)
})

t.test('expiry: the key works until expires_at, then 401', async (t) => {
  const k = await createKey(nats.url, ['--name', 'short', '--expires-in', '3s'])
  const expiresAt = Date.parse(k.expires_at!)
  const before = Date.now()
  const status = await agentsList(a.url, k.key)
  // Only asserted when the call surely ran before the expiry (a stalled machine makes no claim either way).
  if (Date.now() < expiresAt - 200) t.equal(status, 200, 'works before it expires')
  t.ok(before < expiresAt)
  await until('expired', async () => (await agentsList(a.url, k.key)) === 401, 10_000, 50)
  t.ok(Date.now() >= expiresAt - 50, 'refused only once expires_at has come')
  const r = await raw(b.url, 'GET', '/v1/agents', undefined, { 'x-api-key': k.key })
  t.match(r.json.error.message, /expired/)
})

t.test('429 rate_limit_error with retry-after, which the official client waits out', async (t) => {
  const admin = await createKey(nats.url, ['--name', 'ops4', '--scope', 'admin'])
  const make = async () =>
    (await raw(a.url, 'POST', '/v1/admin/api_keys', { name: 'slow', limits: { requests_per_second: 1, burst: 1 } }, { 'x-api-key': admin.key })).json
  const k = await make()
  // With two hosts, each admits half a request a second, one at once: the second in a row is refused.
  let refused: Awaited<ReturnType<typeof raw>> | undefined
  for (let i = 0; i < 10 && !refused; i++) {
    const r = await raw(a.url, 'GET', '/v1/agents', undefined, { 'x-api-key': k.key })
    if (r.status === 429) refused = r
  }
  t.ok(refused, 'a 429 came')
  t.equal(refused!.json.error.type, 'rate_limit_error')
  t.match(refused!.headers.get('retry-after'), /^[1-9]\d*$/)
  t.ok(Number(refused!.headers.get('retry-after-ms')) > 0)
  const k2 = await make()
  const client = clientWith(a.url, k2.key, 5)
  const t0 = Date.now()
  for (let i = 0; i < 3; i++) await client.beta.agents.list()
  t.pass(`3 calls at half a request a second succeeded in ${Date.now() - t0} ms, the client retrying`)
  const lines = await settledLogLines(a)
  t.ok(lines.filter((l) => l.msg === 'request' && l.key === k2.id && l.status === 429).length >= 1, 'the client was refused and retried')
})
