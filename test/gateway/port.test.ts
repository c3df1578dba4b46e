import t from 'tap'
import http from 'node:http'
import net from 'node:net'
import { connect } from '@nats-io/transport-node'
import { pino } from 'pino'
import { startGateway } from '../../gateway/server.js'
import { actorAccess } from '../../supervisor/actor-access.js'
import '../helpers/keepalive.js'
import { startNats } from '../helpers/nats.js'
import { TRANSPORT } from '../helpers/transport.js'
import { freePort } from '../../supervisor/nats-server.js'

// uWebSockets.js shares ports by default (SO_REUSEPORT): a second server on the same port used to start, and
// the kernel split connections between the two.
const nats = await startNats()
const nc = await connect({ servers: nats.url })
const log = pino({ level: 'silent' })
// An explicit port, as users give: uSockets binds port 0 without SO_REUSEADDR, and the last test rebinds.
const first = await startGateway({ nc, actors: actorAccess(nc), log, transport: TRANSPORT, port: await freePort() })
t.teardown(async () => {
  first.close()
  await nc.close()
  await nats.stop()
})

/**
 * GET /healthz on a new connection: a pooled one (fetch keeps them) may still point at a gateway that closed a
 * moment ago, and the client learns that only when it reuses it.
 */
function health(port: number): Promise<number | undefined> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path: '/healthz', agent: false }, (res) => {
        res.resume()
        res.on('end', () => resolve(res.statusCode))
      })
      .on('error', reject)
  })
}

t.test('a second gateway on the same port fails, naming the address', async (t) => {
  await t.rejects(startGateway({ nc, actors: actorAccess(nc), log, transport: TRANSPORT, port: first.port }), {
    message: `cannot listen on 127.0.0.1:${first.port}: port in use (another process is listening there; stop it or set PORT)`,
  })
  t.equal(await health(first.port), 200, 'the first one still serves')
})

t.test('a port held by another program is in use too', async (t) => {
  const other = net.createServer()
  await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve))
  const { port } = other.address() as net.AddressInfo
  await t.rejects(startGateway({ nc, actors: actorAccess(nc), log, transport: TRANSPORT, port }), {
    message: new RegExp(`^cannot listen on 127\\.0\\.0\\.1:${port}: port in use`),
  })
  other.close()
})

t.test('once the first closes, the port is free again', async (t) => {
  const port = first.port
  first.close()
  const again = await startGateway({ nc, actors: actorAccess(nc), log, transport: TRANSPORT, port })
  t.equal(again.port, port)
  t.equal(await health(port), 200)
  again.close()
})
