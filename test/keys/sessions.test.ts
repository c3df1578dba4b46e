import t from 'tap'
import Anthropic, { toFile } from '@anthropic-ai/sdk'
import '../helpers/keepalive.js'
import { raw } from '../helpers/troupe.js'
import { agentAndEnv, sessionStack, until } from '../sessions/_helpers.js'
import { clientWith, createKey } from './_helpers.js'

// A key's concurrent running sessions and upload bytes (issue 45 point 3): at its session limit, a message to a session
// that is not running is a 429 the client knows; a message to one that runs is not refused; once one stops, the next
// may start. Past its upload share, an upload is a 429.

const s = await sessionStack()
// Every turn runs until it is interrupted.
s.model.setFallback({ hang: true })

t.test('concurrent_sessions 1: the second session waits for the first', async (t) => {
  const k = await createKey(s.nats.url, ['--name', 'one-at-a-time', '--sessions', '1', '--rps', '0'])
  t.equal(k.limits && (k.limits as { concurrent_sessions: number }).concurrent_sessions, 1)
  const client = clientWith(s.url, k.key)
  const { agent, env } = await agentAndEnv(client)
  const first = await client.beta.sessions.create({ agent: agent.id, environment_id: env.id })
  const second = await client.beta.sessions.create({ agent: agent.id, environment_id: env.id })
  const message = [{ type: 'user.message', content: [{ type: 'text', text: 'go' }] }] as any
  await client.beta.sessions.events.send(first.id, { events: message })
  // Probed with interrupts, which start nothing, until this host's count has the first session running.
  const probe = () => raw(s.url, 'POST', `/v1/sessions/${second.id}/events`, { events: [{ type: 'user.interrupt' }] }, { 'x-api-key': k.key })
  const refused = await until('the second session refused', async () => {
    const r = await probe()
    return r.status === 429 ? r : undefined
  })
  t.equal(refused.json.error.type, 'rate_limit_error')
  t.match(refused.json.error.message, /1 concurrent running sessions/)
  t.ok(Number(refused.headers.get('retry-after')) >= 1)
  const err = await client.beta.sessions.events.send(second.id, { events: message }).catch((e) => e)
  t.ok(err instanceof Anthropic.RateLimitError, 'a message to the second session is the client RateLimitError')
  // The first, running, still takes events (its interrupt).
  await client.beta.sessions.events.send(first.id, { events: [{ type: 'user.interrupt' }] as any })
  await until('the second session may start', async () => (await probe()).status === 200)
  await client.beta.sessions.events.send(second.id, { events: message })
  await client.beta.sessions.events.send(second.id, { events: [{ type: 'user.interrupt' }] as any })
})

t.test('upload bytes per minute: past its share, an upload is a 429 the client knows', async (t) => {
  const k = await createKey(s.nats.url, ['--name', 'uploader', '--upload-mib-per-minute', '1', '--rps', '0'])
  const client = clientWith(s.url, k.key)
  const bytes = Buffer.alloc(700 * 1024, 1)
  const first = await client.beta.files.upload({ file: await toFile(bytes, 'a.bin') })
  t.match(first.id, /^file_/)
  // 1 MiB a minute, 700 KiB taken: the next 700 KiB are about 22 s away.
  const err = await client.beta.files.upload({ file: await toFile(bytes, 'b.bin') }).catch((e) => e)
  t.ok(err instanceof Anthropic.RateLimitError, 'the second upload is the client RateLimitError')
  t.match(err.error?.error?.message, /upload bytes per minute/)
  t.ok(Number(err.headers?.get?.('retry-after')) >= 10, `retry-after ${err.headers?.get?.('retry-after')} s`)
})
