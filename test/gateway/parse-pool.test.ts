import t from 'tap'
import { ParsePool } from '../../gateway/parse-pool.js'
import { isApiError } from '../../protocol/errors/api-error.js'
import { toEnvelope } from '../../protocol/errors/envelope.js'
import { ROUTES } from '../../protocol/routes/index.js'
import { decode } from '../../protocol/codec.js'

// The parse pool's budget: bytes of large bodies accepted and not yet parsed. The checks run when a body is handed
// over, before anything is awaited, so bodies handed over together meet them in order, whatever the workers' speed.
const KiB = 1024
const MiB = 1024 * KiB
const send = ROUTES.find((r) => r.operationId === 'sessions.events.send')!
const request = { op: send.op.name, rid: 'req_1', params: { session_id: 'sesn_1' }, query: {} }
const OVERHEAD = JSON.stringify({ events: [{ type: 'user.message', content: [{ type: 'text', text: '' }] }] }).length
/** A valid events.send body of exactly `size` bytes. */
const body = (size: number) =>
  Buffer.from(JSON.stringify({ events: [{ type: 'user.message', content: [{ type: 'text', text: 'x'.repeat(size - OVERHEAD) }] }] }))
const deep = Buffer.from(`{"events":${'['.repeat(100_000)}${']'.repeat(100_000)}}`)

/** What the gateway would answer for a pool's refusal. */
const refusal = async (p: Promise<unknown>) => {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  )
  if (!isApiError(err)) throw new Error(`expected a refusal, got ${err}`)
  return toEnvelope(err, 'req_1')
}

t.test('past a small budget: 503 with retry-after-ms; a deep body is refused before it counts; room again once parsed', async (t) => {
  const pool = new ParsePool({ threads: 1, budgetBytes: 3 * MiB })
  t.teardown(() => pool.close())
  const first = pool.encode(send, body(2 * MiB), request)
  const second = pool.encode(send, body(MiB / 2), request)
  t.equal(pool.heldBytes, 2.5 * MiB, 'both held: within the budget')
  const busy = await refusal(pool.encode(send, body(MiB), request))
  t.equal(busy.status, 503)
  t.equal(busy.headers['retry-after-ms'], '1000')
  t.equal(busy.body.error.message, "Large request bodies waiting to be parsed would pass this server's budget of 3 MiB; retry shortly")
  const tooDeep = await refusal(pool.encode(send, deep, request))
  t.equal(tooDeep.status, 400, 'a 100,000-deep body is refused, not queued, while the budget is full')
  t.match(tooDeep.body.error.message, /more than 64 levels deep/)
  t.equal(pool.heldBytes, 2.5 * MiB, 'the refused bodies took none of it')

  const [a, b] = await Promise.all([first, second])
  t.equal((decode(a) as any).body.events[0].content[0].text.length, 2 * MiB - OVERHEAD, 'the accepted bodies are parsed whole')
  t.ok(b instanceof Uint8Array)
  t.equal(pool.heldBytes, 0, 'nothing held once parsed')
  t.ok((await pool.encode(send, body(MiB), request)) instanceof Uint8Array, 'room again')
})

t.test('a body larger than the whole budget is parsed when it is alone, never refused forever', async (t) => {
  const pool = new ParsePool({ threads: 1, budgetBytes: MiB })
  t.teardown(() => pool.close())
  const big = pool.encode(send, body(2 * MiB), request)
  t.equal((await refusal(pool.encode(send, body(100 * KiB), request))).status, 503, 'nothing else while it is parsed')
  t.ok((await big) instanceof Uint8Array)
})
