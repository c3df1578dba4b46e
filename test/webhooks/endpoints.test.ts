import t from 'tap'
import { startNats } from '../helpers/nats.js'
import { stack } from '../helpers/stack.js'
import { raw, settledLogLines, startTroupe } from '../helpers/troupe.js'
import { keyringFile, newKey } from '../vaults/_helpers.js'

/**
 * Webhook endpoints (`/v1/webhooks`; the official client has no workspace-level webhook API, so plain HTTP): create
 * shows the signing secret once, get/list/update never; regenerate replaces it; delete; every URL rule and field
 * refused with a 400 naming it; 404 for an unknown id; and 422 for every op without the operator keyring. The secret
 * is never in clear in the bucket's stored bytes or the server's log.
 */

const s = await stack({ env: { TROUPE_VAULT_KEYRING_FILE: keyringFile([{ id: 'k1', key: newKey() }]) } })
const H = { 'x-api-key': 'k', 'anthropic-version': '2023-06-01' }
const call = (method: string, path: string, body?: unknown) => raw(s.url, method, path, body, H)
const URL_OK = 'https://hooks.example.com/troupe'
const secrets: string[] = []

t.test('create shows the secret once; get, list and update never do; the secret verifies deliveries', async (t) => {
  const c = await call('POST', '/v1/webhooks', { url: URL_OK, event_types: ['session.status_idled', 'session.deleted'] })
  t.equal(c.status, 200, c.text)
  const e = c.json
  t.match(e, {
    id: /^whep_/,
    type: 'webhook_endpoint',
    url: URL_OK,
    event_types: ['session.status_idled', 'session.deleted'],
    status: 'enabled',
    disabled_reason: null,
  })
  t.match(e.signing_secret, /^whsec_[A-Za-z0-9+/]{43}=$/)
  secrets.push(e.signing_secret)
  const g = await call('GET', `/v1/webhooks/${e.id}`)
  t.equal(g.status, 200)
  t.notOk('signing_secret' in g.json, 'get: no secret')
  const { signing_secret: _, ...shown } = e
  t.same(g.json, shown)
  const l = await call('GET', '/v1/webhooks?limit=100')
  t.equal(l.status, 200)
  t.ok(l.json.data.some((x: any) => x.id === e.id))
  t.notOk(l.text.includes('whsec_'), 'list: no secret')
  const u = await call('POST', `/v1/webhooks/${e.id}`, { status: 'disabled', event_types: ['deployment_run.failed'] })
  t.equal(u.status, 200)
  t.match(u.json, { status: 'disabled', event_types: ['deployment_run.failed'], url: URL_OK })
  t.notOk('signing_secret' in u.json)
  const again = await call('POST', `/v1/webhooks/${e.id}`, { status: 'enabled', url: 'https://other.example.org:443/h?x=1' })
  t.match(again.json, { status: 'enabled', url: 'https://other.example.org:443/h?x=1' })
  const r = await call('POST', `/v1/webhooks/${e.id}/regenerate_signing_secret`)
  t.equal(r.status, 200)
  t.match(r.json, { signing_secret: /^whsec_/ })
  t.same(Object.keys(r.json), ['signing_secret'])
  t.not(r.json.signing_secret, e.signing_secret, 'a new secret')
  secrets.push(r.json.signing_secret)
  const d = await call('DELETE', `/v1/webhooks/${e.id}`)
  t.same(d.json, { id: e.id, type: 'webhook_endpoint_deleted' })
  t.equal((await call('GET', `/v1/webhooks/${e.id}`)).status, 404)
  t.equal((await call('DELETE', `/v1/webhooks/${e.id}`)).status, 404)
})

t.test('a create retried with its Idempotency-Key answers the same endpoint and secret', async (t) => {
  const body = { url: URL_OK, event_types: ['session.archived'] }
  const a = await raw(s.url, 'POST', '/v1/webhooks', body, { ...H, 'idempotency-key': 'wh-1' })
  const b = await raw(s.url, 'POST', '/v1/webhooks', body, { ...H, 'idempotency-key': 'wh-1' })
  t.equal(a.status, 200)
  t.same(b.json, a.json)
  secrets.push(a.json.signing_secret)
  const other = await raw(s.url, 'POST', '/v1/webhooks', { ...body, event_types: ['session.updated'] }, { ...H, 'idempotency-key': 'wh-1' })
  t.equal(other.status, 422, 'the same key with another body')
})

t.test('bad input: a 400 naming the field and the rule; unknown ids 404', async (t) => {
  const bad: Array<[unknown, RegExp]> = [
    [{ url: 'http://hooks.example.com/', event_types: ['session.archived'] }, /url must use https/],
    [{ url: 'https://hooks.example.com:8443/', event_types: ['session.archived'] }, /url must use port 443/],
    [{ url: 'https://u:p@hooks.example.com/', event_types: ['session.archived'] }, /url must not carry credentials/],
    [{ url: 'https://hooks.example.com/#x', event_types: ['session.archived'] }, /url must not have a fragment/],
    [{ url: 'https://10.0.0.1/', event_types: ['session.archived'] }, /url must name a host, not an IP address/],
    [{ url: 'https://localhost/', event_types: ['session.archived'] }, /url must not name localhost/],
    [{ url: URL_OK, event_types: [] }, /event_types must be non-empty/],
    [{ url: URL_OK, event_types: ['session.exploded'] }, /event_types\[0\]/],
    [{ url: URL_OK }, /event_types must be/],
    [{ url: URL_OK, event_types: ['session.archived'], status: 'enabled' }, /status is not a known field/],
  ]
  for (const [body, why] of bad) {
    const r = await call('POST', '/v1/webhooks', body)
    t.equal(r.status, 400, JSON.stringify(body))
    t.match(r.json?.error?.message, why)
  }
  t.match((await call('POST', '/v1/webhooks/whep_nope', {})).json?.error?.message, /must name url, event_types or status/)
  t.equal((await call('GET', '/v1/webhooks/whep_01UNKNOWN')).status, 404)
  t.equal((await call('GET', '/v1/webhooks/vlt_01WRONGKIND')).status, 404, 'another kind of id: 404 without asking anyone')
  t.equal((await call('GET', '/v1/webhooks?limit=0')).status, 400)
})

t.test('the secret is never in clear in the stored bytes nor in the log', async (t) => {
  const { connect } = await import('@nats-io/transport-node')
  const { jetstreamManager } = await import('@nats-io/jetstream')
  const nc = await connect({ servers: s.nats.url })
  t.teardown(() => nc.close())
  const jsm = await jetstreamManager(nc)
  const info = await jsm.streams.info('KV_troupe_webhooks')
  let stored = ''
  for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
    const m = await jsm.streams.getMessage('KV_troupe_webhooks', { seq }).catch(() => undefined)
    if (m) stored += Buffer.from(m.data).toString('latin1')
  }
  t.ok(stored.length > 0, 'something is stored')
  const log = JSON.stringify(await settledLogLines(s.troupe))
  for (const secret of secrets) {
    t.notOk(stored.includes(secret) || stored.includes(secret.slice(6)), 'not in the bucket')
    t.notOk(log.includes(secret.slice(6)), 'not in the log')
  }
})

t.test('without the operator keyring every webhook op answers 422', async (t) => {
  const nats = await startNats()
  const bare = await startTroupe({ natsUrl: nats.url })
  t.teardown(async () => {
    await bare.stop()
    await nats.stop()
  })
  const ask = (method: string, path: string, body?: unknown) => raw(bare.url, method, path, body, H)
  for (const [method, path, body] of [
    ['POST', '/v1/webhooks', { url: URL_OK, event_types: ['session.archived'] }],
    ['GET', '/v1/webhooks', undefined],
    ['GET', '/v1/webhooks/whep_01X', undefined],
    ['POST', '/v1/webhooks/whep_01X', { status: 'disabled' }],
    ['DELETE', '/v1/webhooks/whep_01X', undefined],
    ['POST', '/v1/webhooks/whep_01X/regenerate_signing_secret', undefined],
  ] as const) {
    const r = await ask(method, path, body)
    // No endpoint can exist without a keyring: one named by id is a 404 before the rule is reached, or the 422.
    if (path.startsWith('/v1/webhooks/')) t.ok([404, 422].includes(r.status), `${method} ${path}: ${r.status}`)
    else {
      t.equal(r.status, 422, `${method} ${path}`)
      t.match(r.json.error.message, /operator keyring .*TROUPE_VAULT_KEYRING_FILE/)
    }
  }
})
