import t from 'tap'
import { connect } from '@nats-io/transport-node'
import { Kvm, type KV, type KvWatchEntry } from '@nats-io/kv'
import { encode } from '../../protocol/codec.js'
import { Projection, WATCH_STALL_MS } from '../../actors/kit/projection.js'
import { startNats } from '../helpers/nats.js'

// nats-server 2.9 may serve a watch's consumer from a replica whose catch-up has stalled: the watch delivers what
// that replica has, then nothing, for minutes. Start-up waited on such a watch for ever (a restarted host in a chaos
// run never printed its start-up block). Here the stalled replica is at the edge: the bucket's first watch stops
// delivering after a few entries, while staying open, as the stalled consumer did.

const nats = await startNats()
t.teardown(() => nats.stopNow())
const nc = await connect({ servers: nats.url })
t.teardown(() => nc.close())

/** A bucket whose first watch delivers `keep` entries and then nothing, until stopped. */
function stallingFirstWatch(kv: KV, keep: number): { kv: KV; watches: () => number } {
  let watches = 0
  const proxy = new Proxy(kv, {
    get(target, prop, receiver) {
      if (prop !== 'watch') {
        const v = Reflect.get(target, prop, receiver)
        return typeof v === 'function' ? v.bind(target) : v
      }
      return async (opts: unknown) => {
        const real = await target.watch(opts as Parameters<KV['watch']>[0])
        if (watches++ > 0) return real
        let stop!: () => void
        const stopped = new Promise<void>((r) => (stop = r))
        return {
          stop() {
            real.stop()
            stop()
          },
          async *[Symbol.asyncIterator]() {
            let n = 0
            for await (const e of real as AsyncIterable<KvWatchEntry>) {
              if (n++ >= keep) break
              yield e
            }
            await stopped
          },
        }
      }
    },
  })
  return { kv: proxy, watches: () => watches }
}

t.test('a projection whose watch stalls behind the bucket watches again and catches up', async (t) => {
  const kv = await new Kvm(nc).create('stall_test', { history: 1 })
  for (let i = 0; i < 50; i++) await kv.put(`rec.r${String(i).padStart(2, '0')}`, encode({ id: `r${i}`, created_at: new Date(1e12 + i).toISOString() }))
  const warned: string[] = []
  const stalling = stallingFirstWatch(kv, 10)
  const projection = new Projection<{ id: string; created_at: string }>(stalling.kv, 'rec.')
  t.teardown(() => projection.stop())
  const began = Date.now()
  await projection.start({ warn: (_o, msg) => warned.push(msg) })
  await projection.fresh()
  const took = Date.now() - began
  t.equal(projection.size, 50, 'every record, once the watch was replaced')
  t.equal(stalling.watches(), 2, 'watched twice')
  t.ok(took >= WATCH_STALL_MS, `not before the watch had been silent WATCH_STALL_MS (${took} ms)`)
  t.match(warned.join('\n'), /delivered nothing for 5000 ms while behind the bucket.*watching again/, 'said, once')

  // The new watch goes on: later writes reach the projection, and fresh() does not wait on the old one.
  await kv.put('rec.r99', encode({ id: 'r99', created_at: new Date(2e12).toISOString() }))
  await projection.fresh()
  t.equal(projection.get('r99')?.id, 'r99', 'a later write is seen through the new watch')
})
