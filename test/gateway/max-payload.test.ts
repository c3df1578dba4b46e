import t from 'tap'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { Writable } from 'node:stream'
import { connect } from '@nats-io/transport-node'
import { pino } from 'pino'
import { startGateway } from '../../gateway/server.js'
import { actorAccess } from '../../supervisor/actor-access.js'
import { ACTOR_REQUEST_HEADROOM } from '../../protocol/wire.js'
import { askActor } from '../../actors/kit/wire.js'
import { NATS_CONF, startEmbeddedNats } from '../../supervisor/nats-server.js'
import '../helpers/keepalive.js'
import { raw } from '../helpers/troupe.js'
import { TRANSPORT } from '../helpers/transport.js'

// An external NATS keeps its own max_payload (1MB by default): the gateway refuses what it could not carry,
// with a 413 before anything is stored, and says so once at start.
const dir = mkdtempSync(path.join(tmpdir(), 'troupe-nats-'))
const conf = path.join(dir, 'nats.conf')
writeFileSync(conf, readFileSync(NATS_CONF, 'utf8').replace(/^max_payload:.*$/m, 'max_payload: 1MB'))
const nats = await startEmbeddedNats(path.join(dir, 'jetstream'), () => undefined, { conf })
nats.unref()
const nc = await connect({ servers: nats.url })
const lines: any[] = []
const sink = new Writable({
  write: (chunk, _enc, done) => {
    lines.push(JSON.parse(String(chunk)))
    done()
  },
})
const gw = await startGateway({ nc, actors: actorAccess(nc), log: pino({ level: 'info' }, sink), port: 0, transport: TRANSPORT, actorTimeoutMs: 500 })
const url = `http://127.0.0.1:${gw.port}`
t.teardown(async () => {
  gw.close()
  await nc.close()
  await nats.stop()
  rmSync(dir, { recursive: true, force: true })
})

const MAX_PAYLOAD = 1024 * 1024

t.test('the body limit follows the server, with one warning at start', async (t) => {
  t.equal(nc.info?.max_payload, MAX_PAYLOAD)
  t.equal(gw.bodyLimit, MAX_PAYLOAD - ACTOR_REQUEST_HEADROOM)
  const warnings = lines.filter((l) => l.level === 40)
  t.equal(warnings.length, 1)
  t.match(warnings[0].msg, `request bodies are limited to ${gw.bodyLimit} bytes`)
  t.match(warnings[0].msg, /max_payload of 1048576 bytes; set max_payload: 64MB/)
})

t.test('a body over that limit is a 413 naming it', async (t) => {
  const r = await raw(url, 'POST', '/v1/environments', { name: 'x', description: 'd'.repeat(gw.bodyLimit) })
  t.equal(r.status, 413)
  t.equal(r.json.error.type, 'request_too_large')
  t.match(r.json.error.message, `limit of ${gw.bodyLimit} bytes`)
})

t.test('a request that outgrows max_payload once encoded is a 413, not a 500', async (t) => {
  const req = { op: 'create', rid: 'req_test', params: {}, query: {}, body: { blob: 'b'.repeat(MAX_PAYLOAD) } }
  await t.rejects(askActor(nc, 'troupe.environment.create', req, 500), {
    status: 413,
    type: 'request_too_large',
    message: /once encoded for NATS, over the server's max_payload of 1048576 bytes/,
  })
  // One that fits still goes out (nobody answers here: the usual 503).
  await t.rejects(askActor(nc, 'troupe.environment.create', { ...req, body: {} }, 500), { status: 503, message: /retry shortly/ })
})
