// The baseline: raw uWebSockets.js answering each request with one raw NATS request/reply, the responder
// in the same process (as `troupe serve` runs gateway and actor host together). GET echoes a stored JSON
// document; POST does a raw KV put of the body first. Prints its port.
import uWS from 'uWebSockets.js'
import { connect } from '@nats-io/transport-node'
import { Kvm } from '@nats-io/kv'

const nc = await connect({ servers: process.argv[2]! })
const kv = await new Kvm(nc).create('bench_baseline', { history: 1 })
const doc = new TextEncoder().encode(JSON.stringify({ id: 'agent_x', name: 'baseline', model: { id: 'claude-sonnet-4-5' } }))
let n = 0
nc.subscribe('bench.get', { callback: (_e, m) => void m.respond(doc) })
nc.subscribe('bench.put', {
  callback: (_e, m) => {
    kv.put(`k.${n++}`, m.data).then(
      () => m.respond(m.data),
      () => m.respond(new Uint8Array()),
    )
  },
})

const app = uWS.App()
app.get('/get', (res) => {
  let aborted = false
  res.onAborted(() => (aborted = true))
  nc.request('bench.get', undefined, { timeout: 5000 }).then((r) => {
    if (!aborted) res.cork(() => res.writeHeader('content-type', 'application/json').end(r.data))
  })
})
app.post('/put', (res) => {
  let aborted = false
  res.onAborted(() => (aborted = true))
  const chunks: Buffer[] = []
  res.onData((c, last) => {
    chunks.push(Buffer.from(new Uint8Array(c)))
    if (!last) return
    nc.request('bench.put', Buffer.concat(chunks), { timeout: 5000 }).then((r) => {
      if (!aborted) res.cork(() => res.writeHeader('content-type', 'application/json').end(r.data))
    })
  })
})
app.listen('127.0.0.1', 0, (s) => {
  console.log(`listening on ${uWS.us_socket_local_port(s)}`)
})
