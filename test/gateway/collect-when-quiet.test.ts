import t from 'tap'
import { CollectWhenQuiet } from '../../gateway/collect-when-quiet.js'

const settle = (ms: number) => new Promise((r) => setTimeout(r, ms))

t.test('once large bodies stop coming, the garbage they left is collected', async (t) => {
  const collected: number[] = []
  const quiet = new CollectWhenQuiet({ quietMs: 50, worthBytes: 1024, onCollected: (bytes) => collected.push(bytes) })
  t.teardown(() => quiet.close())
  // What a body leaves behind once answered: nothing refers to it any more.
  let garbage: object | undefined = { body: Buffer.alloc(1024 * 1024) }
  const left = new WeakRef(garbage)
  garbage = undefined
  quiet.note(1024 * 1024)
  await settle(10)
  quiet.note(1024 * 1024)
  // A WeakRef's target stays alive until the current job ends: look after the quiet spell, in another one.
  await settle(300)
  t.equal(left.deref(), undefined, 'collected')
  t.same(collected, [2 * 1024 * 1024], 'once, after both bodies')
})
