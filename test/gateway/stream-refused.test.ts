import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import t from 'tap'
import '../helpers/keepalive.js'
import { startEmbeddedNats } from '../../supervisor/nats-server.js'
import { until } from '../helpers/wait.js'
import { clientFor, raw, startTroupe } from '../helpers/troupe.js'
import { agentAndEnv } from '../sessions/_helpers.js'

// An SSE tail whose live subscription ends before the stream starts: here because nats-server refuses it (the host's
// NATS user may not subscribe to troupe.live.>), a real server's permission check. The tail answers 503
// stream_closed, a JSON envelope, and no SSE.

const dir = mkdtempSync(path.join(tmpdir(), 'troupe-nats-perm-'))
const conf = path.join(dir, 'nats.conf')
writeFileSync(
  conf,
  `max_payload: 64MB
max_pending: 256MB
jetstream { max_memory_store: 256MB }
authorization {
  users = [
    { user: troupe, password: host, permissions: { subscribe: { deny: ["troupe.live.>"] } } }
    { user: probe }
  ]
}
no_auth_user: probe
`,
)
// `probe`, the user a connection without credentials is taken for, is how the server's start is seen.
const nats = await startEmbeddedNats(path.join(dir, 'jetstream'), () => undefined, { conf })
nats.unref()
t.teardown(() => {
  nats.killNow()
  rmSync(dir, { recursive: true, force: true })
})
const natsUrl = nats.url.replace('nats://', 'nats://troupe:host@')
// Tails over NATS: with calls served in-process, the session's owner beside the gateway would feed the tail itself.
const troupe = await startTroupe({ natsUrl, env: { TROUPE_LOCAL_CALLS: '0' } })
t.teardown(() => troupe.killNow())
const client = clientFor(troupe.url)

t.test('the live subscription refused: 503 stream_closed with retry-after-ms, before any SSE; the host serves on', async (t) => {
  const { agent, env } = await agentAndEnv(client)
  const session = await client.beta.sessions.create({ agent: agent.id, environment_id: env.id } as any)
  for (let i = 0; i < 2; i++) {
    const r = await raw(troupe.url, 'GET', `/v1/sessions/${session.id}/events/stream`, undefined, { accept: 'text/event-stream' })
    t.equal(r.status, 503, `attempt ${i + 1}: ${r.text}`)
    t.equal(r.headers.get('content-type'), 'application/json')
    t.equal(r.headers.get('retry-after-ms'), '500')
    t.same(r.json, {
      type: 'error',
      error: { type: 'overloaded_error', message: 'The event stream closed before it started; retry shortly' },
      request_id: r.headers.get('request-id'),
    })
  }
  t.equal((await client.beta.sessions.retrieve(session.id)).id, session.id, 'everything else is served')
  await until('the refusal to be logged (lines are written in batches)', () => /live subscription failed/.test(troupe.logs()), 10_000)
  t.pass('the refusal is logged')
})
