import t from 'tap'
import { connect } from '@nats-io/transport-node'
import { pino } from 'pino'
import { startGateway } from '../../gateway/server.js'
import { actorAccess } from '../../supervisor/actor-access.js'
import { startNats } from '../helpers/nats.js'
import { TRANSPORT } from '../helpers/transport.js'
import { raw } from '../helpers/troupe.js'

// A gateway whose NATS has no actor host at all: what clients see while every owner is failing over.
const nats = await startNats()
const nc = await connect({ servers: nats.url })
const gw = await startGateway({ nc, actors: actorAccess(nc), log: pino({ level: 'silent' }), port: 0, transport: TRANSPORT, actorTimeoutMs: 500 })
const url = `http://127.0.0.1:${gw.port}`
t.teardown(async () => {
  gw.close()
  await nc.close()
  await nats.stop()
})

t.test('no owner answering is a retryable 503', async (t) => {
  const r = await raw(url, 'POST', '/v1/environments', { name: 'x' })
  t.equal(r.status, 503)
  t.match(r.headers.get('retry-after-ms'), /^\d+$/)
  t.equal(r.json.type, 'error')
  t.match(r.json.request_id, /^req_/)
})

t.test('readiness says which check failed', async (t) => {
  const r = await raw(url, 'GET', '/readyz')
  t.equal(r.status, 503)
  t.same(r.json.checks, { nats: true, jetstream: true, actor_host: false, placement: false })
  t.equal((await raw(url, 'GET', '/healthz')).status, 200)
})

t.test('an owner that takes the request but never answers: a write without a key is uncertain, not retryable', async (t) => {
  // Subscribed, so requests are delivered, but never answered: what a host that stalls mid-request looks like.
  const owner = await connect({ servers: nats.url })
  t.teardown(() => owner.close())
  owner.subscribe('troupe.session.>', { callback: () => undefined })
  await owner.flush()
  const events = { events: [{ type: 'user.message', content: [{ type: 'text', text: 'hi' }] }] }
  const plain = await raw(url, 'POST', '/v1/sessions/sesn_01TIMEOUT/events', events)
  t.equal(plain.status, 504)
  t.equal(plain.headers.get('x-should-retry'), 'false', 'the official client must not send it again blindly')
  t.equal(plain.json.error.type, 'timeout_error')
  t.match(plain.json.error.message, /may or may not have been stored.*Idempotency-Key/)
  const keyed = await raw(url, 'POST', '/v1/sessions/sesn_01TIMEOUT/events', events, { 'idempotency-key': 'k1' })
  t.equal(keyed.status, 503, 'with a key a retry is safe')
  t.match(keyed.headers.get('retry-after-ms'), /^\d+$/)
  const read = await raw(url, 'GET', '/v1/sessions/sesn_01TIMEOUT')
  t.equal(read.status, 503, 'a read is always safe to retry')
})
