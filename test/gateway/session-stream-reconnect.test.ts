import t from 'tap'
import '../helpers/keepalive.js'
import net from 'node:net'
import { connect } from '@nats-io/transport-node'
import { jetstreamManager } from '@nats-io/jetstream'
import { pino } from 'pino'
import { startGateway } from '../../gateway/server.js'
import { actorAccess } from '../../supervisor/actor-access.js'
import { decode, encode } from '../../protocol/codec.js'
import type { ActorRequest } from '../../protocol/envelope.js'
import { newId } from '../../protocol/ids.js'
import type { SessionEvent } from '../../protocol/session-events.js'
import { EVENTS_STREAM, eventsSubject } from '../../protocol/subjects.js'
import { ensureEventsStream, EventLog } from '../../actors/session/log/log.js'
import { startNats } from '../helpers/nats.js'
import { TRANSPORT } from '../helpers/transport.js'
import { guard, sseReader } from '../helpers/sse-reader.js'

// A gateway whose NATS connection is lost and comes back, while a session it streams stores an event: the event's
// live copy was published while nobody was there to get it, and nothing later on its subject reveals the gap. The
// tail reads it back once the connection is back. The connection goes through a TCP relay the test cuts (the edge);
// the rest is real: nats-server, the events stream as hosts create it, the gateway, the session kind's EventLog. The
// owner's `stream.open` is a stand-in answering the session's last stored sequence, as the owner does.

const nats = await startNats()
const natsPort = Number(new URL(nats.url).port)
const log = pino({ level: 'silent' })

/** Relays to the server while open; once cut, drops every connection and refuses new ones until opened again. */
const relayed = new Set<net.Socket>()
let refusing = false
const relay = net.createServer((client) => {
  if (refusing) return client.destroy()
  const server = net.connect(natsPort, '127.0.0.1')
  for (const s of [client, server]) {
    relayed.add(s)
    s.on('close', () => relayed.delete(s))
    s.on('error', () => undefined)
  }
  client.pipe(server).pipe(client)
  client.on('close', () => server.destroy())
  server.on('close', () => client.destroy())
})
await new Promise<void>((r) => relay.listen(0, '127.0.0.1', r))
const relayUrl = `nats://127.0.0.1:${(relay.address() as net.AddressInfo).port}`

// The writer and the stand-in owner reach the server directly; only the gateway's connection goes through the relay.
const direct = await connect({ servers: nats.url })
const jsm = await jetstreamManager(direct)
await ensureEventsStream({ jsm, replicas: 1, log })
const gwNc = await connect({ servers: relayUrl, reconnectTimeWait: 50, maxReconnectAttempts: -1, pingInterval: 60_000 })
const gw = await startGateway({ nc: gwNc, actors: actorAccess(gwNc), log, port: 0, transport: TRANSPORT, sseKeepaliveMs: 0 })
t.teardown(async () => {
  gw.close()
  await gwNc.close()
  relay.close()
  for (const s of relayed) s.destroy()
  await direct.close()
  await nats.stop()
})

const lastStored = async (sid: string) => (await jsm.streams.getMessage(EVENTS_STREAM, { last_by_subj: eventsSubject(sid) }).catch(() => null))?.seq ?? 0
direct.subscribe('troupe.session.*.*.stream.open', {
  callback: (_err, msg) => {
    const sid = decode<ActorRequest>(msg.data).params.session_id!
    void lastStored(sid).then((seq) => msg.respond(encode({ ok: true, body: { last_seq: seq } })))
  },
})

t.test('an event stored while the gateway was cut off from NATS is sent once it is back, with nothing stored after it', async (t) => {
  const sid = newId('sesn')
  const events = new EventLog(direct, sid, 0)
  const stored = async () => {
    const ev: SessionEvent = { type: 'agent.message', id: newId('sevt'), processed_at: new Date().toISOString(), content: [] }
    await events.append(ev, { id: ev.id })
    return ev.id
  }
  const first = await stored()
  const res = await guard(fetch(`http://127.0.0.1:${gw.port}/v1/sessions/${sid}/events/stream?after=${first}`), 'stream headers')
  t.equal(res.status, 200)
  const sse = sseReader(res)
  const live = await stored()
  t.equal((await sse.take(1))[0]!.id, live, 'live before the cut')

  const back = new Promise<void>((resolve) => {
    void (async () => {
      for await (const s of gwNc.status()) if (s.type === 'reconnect') return resolve()
    })()
  })
  refusing = true
  for (const s of relayed) s.destroy()
  const missed = await stored()
  refusing = false
  await guard(back, 'the gateway to reconnect')
  t.same(
    (await sse.take(2)).map((m) => m.id),
    [live, missed],
    'the event stored meanwhile, read back',
  )
  const next = await stored()
  t.equal((await sse.take(3))[2]!.id, next, 'then live again, nothing twice')
  await sse.cancel()
})
