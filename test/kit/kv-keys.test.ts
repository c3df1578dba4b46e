import t from 'tap'
import { TimeoutError } from '@nats-io/nats-core'
import type { KV } from '@nats-io/kv'
import { listKeys } from '../../actors/kit/kv-keys.js'

/**
 * nats.js's `keys()` ends its iteration only when the consumer says nothing is pending; a leader moving under it can
 * leave it waiting for ever. The stand-in here is such an iteration: it yields what it has, then never ends.
 */
function stuckKeys(first: string[]) {
  let stopped = false
  let wake: (() => void) | undefined
  const iter = {
    stop() {
      stopped = true
      wake?.()
    },
    async *[Symbol.asyncIterator]() {
      yield* first
      while (!stopped) await new Promise<void>((r) => (wake = r))
    },
  }
  return { kv: { keys: async () => iter } as unknown as KV, stopped: () => stopped }
}

t.test('a listing that never ends fails with a timeout and stops its iteration', async (t) => {
  const s = stuckKeys(['work.a', 'work.b'])
  await t.rejects(listKeys(s.kv, 'work.>', 50), TimeoutError)
  t.ok(s.stopped(), 'the consumer is stopped, not left reading')
})

t.test('a listing that ends returns its keys', async (t) => {
  const kv = {
    keys: async () =>
      (async function* () {
        yield* ['a', 'b']
      })(),
  } as unknown as KV
  t.same(await listKeys(kv, '>', 1000), ['a', 'b'])
})
