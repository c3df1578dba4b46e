import net from 'node:net'
import t from 'tap'
import { raw } from '../helpers/troupe.js'
import { stack } from '../helpers/stack.js'

// The parse pool's budget over real HTTP (gateway/parse-pool.ts holds the unit checks): a server whose budget is the
// smallest allowed, 32 MiB, given two bodies of 16.5 MiB at once. Whichever is handed to the pool second would pass
// the budget while the first is parsed, so one of them is refused with a 503 and the other is parsed.

const MiB = 1024 * 1024
const s = await stack({ env: { TROUPE_PARSE_BUDGET_MIB: '32' } })
const port = Number(new URL(s.url).port)

/**
 * A body of `size` bytes that is slow to parse: arrays of 10,000 zeros (the most an array in a request may hold),
 * some 8 million tokens for 16.5 MiB. It parses, then fails validation (400: `x` is no field of an environment).
 */
function slowBody(size: number): Buffer {
  const row = `[${'0,'.repeat(9_999)}0]`
  const head = '{"name":"budget","x":['
  const rows: string[] = []
  let used = head.length + 2
  while (used + row.length + 1 <= size) {
    rows.push(row)
    used += row.length + 1
  }
  const json = `${head}${rows.join(',')}]}`
  return Buffer.from(json + ' '.repeat(size - json.length))
}

interface Answer {
  status: number
  headers: string
  body: string
}

/** One request on its own connection, its last byte held back until `release` is called; resolves its answer. */
function request(body: Buffer): { sent: Promise<void>; release(): void; answer: Promise<Answer> } {
  const sock = net.connect(port, '127.0.0.1')
  let got = Buffer.alloc(0)
  const answer = new Promise<Answer>((resolve, reject) => {
    sock.on('data', (d) => {
      got = Buffer.concat([got, d])
      const text = got.toString()
      const end = text.indexOf('\r\n\r\n')
      if (end < 0) return
      const headers = text.slice(0, end)
      const length = Number(/\r\ncontent-length: (\d+)/i.exec(headers)?.[1])
      if (got.length - end - 4 < length) return
      sock.destroy()
      resolve({ status: Number(headers.slice(9, 12)), headers, body: text.slice(end + 4, end + 4 + length) })
    })
    sock.on('error', reject)
  })
  const head = `POST /v1/environments HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n`
  const sent = new Promise<void>((resolve) => sock.write(Buffer.concat([Buffer.from(head), body.subarray(0, -1)]), () => resolve()))
  return { sent, release: () => sock.write(body.subarray(-1)), answer }
}

t.test('two large bodies past the budget at once: one 503 parse_pool_busy with retry-after-ms, the other parsed', async (t) => {
  const a = request(slowBody(16.5 * MiB))
  const b = request(slowBody(16.5 * MiB))
  await Promise.all([a.sent, b.sent])
  // Both wholly sent but one byte: their last bytes go out together, so both bodies are complete at once, and the
  // second handed to the pool finds the first still parsing (8 million tokens take a worker 100 ms and more).
  a.release()
  b.release()
  const answers = await Promise.all([a.answer, b.answer])
  t.same(answers.map((a) => a.status).sort(), [400, 503], answers.map((a) => `${a.status} ${a.body.slice(0, 200)}`).join(' | '))
  const busy = answers.find((a) => a.status === 503)!
  t.match(busy.headers, /\r\nretry-after-ms: 1000(\r\n|$)/)
  const env = JSON.parse(busy.body)
  t.same(env.error, {
    type: 'overloaded_error',
    message: "Large request bodies waiting to be parsed would pass this server's budget of 32 MiB; retry shortly",
  })
  const parsed = JSON.parse(answers.find((a) => a.status === 400)!.body)
  t.match(parsed.error.message, /\bx\b/, 'the other was parsed and validated: x is no field')
  // Once both are answered the budget is free again: the refused body alone is parsed.
  const again = request(slowBody(16.5 * MiB))
  await again.sent
  again.release()
  t.equal((await again.answer).status, 400, 'parsed when alone')
  t.equal((await raw(s.url, 'GET', '/healthz')).status, 200)
})
