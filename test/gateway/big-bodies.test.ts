import t from 'tap'
import { DEFAULT_BODY_LIMIT } from '../../gateway/server.js'
import { settledLogLines } from '../helpers/troupe.js'
import { agentAndEnv, failure, sessionStack } from '../sessions/_helpers.js'

// Bodies up to the documented 32 MiB reach their actor and are stored whole, through the repository's nats.conf
// (max_payload 64MB): every body travels as one NATS message, and every event as one JetStream record. What
// cannot be stored whole is refused with a 413 before anything of the request is stored; never a 500. The
// official client sends them (it retries a 503 by itself, as users' clients do).
const s = await sessionStack()
const { agent, env } = await agentAndEnv(s.client)
const sessions = s.client.beta.sessions
const MiB = 1024 * 1024

const message = (text: string) => ({ type: 'user.message', content: [{ type: 'text', text }] })
const EVENT_OVERHEAD = JSON.stringify(message('')).length
const BODY_OVERHEAD = JSON.stringify({ events: [message('')] }).length

/** Events whose request body (as the client writes it: compact JSON) is exactly `size` bytes: one user.message. */
const bodyOf = (size: number) => ({ events: [message('x'.repeat(size - BODY_OVERHEAD))] })

const newSession = async () => (await sessions.create({ agent: agent.id, environment_id: env.id } as any)).id

/** Sends, then waits for the turn it starts to end, so one big turn does not overlap the next request. */
async function send(sid: string, body: { events: unknown[] }, settle = true) {
  const sent = await sessions.events.send(sid, body as any)
  if (!settle) return sent
  const deadline = Date.now() + 30_000
  while ((await sessions.retrieve(sid)).status !== 'idle') {
    if (Date.now() > deadline) throw new Error(`session ${sid} did not go idle`)
    await new Promise((r) => setTimeout(r, 50))
  }
  return sent
}

/** The text lengths of the session's stored user.message events, oldest first. */
async function storedLengths(sid: string): Promise<number[]> {
  const page = await sessions.events.list(sid, { limit: 100 } as any)
  return (page.data as any[]).filter((e) => e.type === 'user.message').map((e) => e.content[0].text.length)
}

let storedEventLimit = 0

t.test('a body of exactly the limit whose event cannot be stored whole: 413, nothing stored', async (t) => {
  const sid = await newSession()
  const body = bodyOf(DEFAULT_BODY_LIMIT)
  t.equal(JSON.stringify(body).length, DEFAULT_BODY_LIMIT)
  const err = await failure(send(sid, body))
  t.equal(err.status, 413, err.message.slice(0, 300))
  t.equal(err.error?.error?.type, 'request_too_large')
  const m = /index 0 of the request \(user\.message\) is (\d+) bytes of JSON; a stored event holds at most (\d+)\. Nothing of this request was stored/.exec(
    err.error?.error?.message,
  )
  t.ok(m, err.error?.error?.message)
  storedEventLimit = Number(m?.[2])
  t.ok(storedEventLimit > DEFAULT_BODY_LIMIT - 4096 && storedEventLimit < DEFAULT_BODY_LIMIT, `stored event limit ${storedEventLimit}`)
  t.same(await storedLengths(sid), [], 'nothing stored')
})

t.test('the largest storable message, just under 32 MiB with its JSON, is stored and read back whole', async (t) => {
  const sid = await newSession()
  const text = storedEventLimit - EVENT_OVERHEAD
  const body = { events: [message('y'.repeat(text))] }
  const size = JSON.stringify(body).length
  t.ok(size < DEFAULT_BODY_LIMIT && size > DEFAULT_BODY_LIMIT - 4096, `body is ${size} bytes`)
  const sent = await send(sid, body)
  t.equal((sent as any).data[0].content[0].text.length, text, 'the reply echoes it whole')
  t.same(await storedLengths(sid), [text], 'read back whole')
})

for (const mib of [8, 9, 20]) {
  t.test(`a ${mib} MiB user.message is stored and read back whole`, async (t) => {
    const sid = await newSession()
    await send(sid, bodyOf(mib * MiB))
    t.same(await storedLengths(sid), [mib * MiB - BODY_OVERHEAD])
  })
}

t.test('33 MiB is refused by the gateway with the envelope', async (t) => {
  const sid = await newSession()
  const err = await failure(send(sid, bodyOf(33 * MiB)))
  t.equal(err.status, 413)
  t.equal(err.error?.type, 'error')
  t.equal(err.error?.error?.type, 'request_too_large')
  t.match(err.error?.error?.message, `limit of ${DEFAULT_BODY_LIMIT} bytes`)
  t.equal(err.requestID, err.error?.request_id)
  t.same(await storedLengths(sid), [])
})

t.test('20 events of 1 MiB in one request are stored and read back whole', async (t) => {
  const sid = await newSession()
  // Twenty turns follow, each sending the history so far to the model: the test does not wait for them.
  const sent = await send(sid, { events: Array.from({ length: 20 }, (_, i) => message(String.fromCharCode(97 + i).repeat(MiB))) }, false)
  t.equal((sent as any).data.length, 20)
  t.same(await storedLengths(sid), Array(20).fill(MiB))
})

t.test('the server logged no failure and answered no 500', async (t) => {
  const lines = (await settledLogLines(s.troupe)).map((l) => JSON.stringify(l))
  t.same(
    lines.filter((l) => /"level":(50|60)/.test(l)),
    [],
  )
  t.same(
    lines.filter((l) => l.includes('"msg":"request"') && l.includes('"status":500')),
    [],
  )
})
