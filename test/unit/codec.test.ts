import t from 'tap'
import { decode, encode } from '../../protocol/codec.js'

t.test('after a large message the codec packs into a small buffer again, and the large one stays intact', async (t) => {
  const big = encode({ text: 'x'.repeat(8 * 1024 * 1024) })
  t.ok(big.buffer.byteLength >= 8 * 1024 * 1024)
  const small = encode({ n: 1 })
  t.ok(small.buffer.byteLength <= 8192, `the next message is packed into a buffer of ${small.buffer.byteLength} bytes, not the large one`)
  t.equal((decode(big) as { text: string }).text.length, 8 * 1024 * 1024, 'the large message is untouched')
  t.same(decode(small), { n: 1 })
})
