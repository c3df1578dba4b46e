import t from 'tap'
import { connect } from '@nats-io/transport-node'
import { pino } from 'pino'
import { startGateway } from '../../gateway/server.js'
import { startNats } from '../helpers/nats.js'
import { raw } from '../helpers/troupe.js'

// A gateway whose NATS has no actor host at all: what clients see while every owner is failing over.
const nats = await startNats()
const nc = await connect({ servers: nats.url })
const gw = await startGateway({ nc, log: pino({ level: 'silent' }), port: 0, actorTimeoutMs: 500 })
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
  t.same(r.json.checks, { nats: true, jetstream: true, actor_host: false })
  t.equal((await raw(url, 'GET', '/healthz')).status, 200)
})
