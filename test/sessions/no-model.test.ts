import { mkdtempSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import { stack } from '../helpers/stack.js'
import { logLines } from '../helpers/troupe.js'
import { until } from '../helpers/wait.js'
import { agentAndEnv, collect, isIdle } from './_helpers.js'

// A server started without a model endpoint (no TROUPE_MODEL_BASE_URL, no ANTHROPIC_API_KEY) says so at
// start-up, and a session turn on it ends at once with a session.error instead of hanging.

const dataDir = mkdtempSync(path.join(os.tmpdir(), 'troupe-data-'))
const s = await stack({ env: { TROUPE_MODEL_BASE_URL: '', ANTHROPIC_API_KEY: '', TROUPE_DATA_DIR: dataDir } })

t.test('start-up logs a warning naming TROUPE_MODEL_BASE_URL', async (t) => {
  const warning = await until('the warning', () => logLines(s.troupe).find((l) => typeof l.msg === 'string' && l.msg.includes('TROUPE_MODEL_BASE_URL')))
  t.match(warning.msg, 'ANTHROPIC_API_KEY')
  t.equal(warning.level, 40, 'at warn level')
})

t.test('a message ends with session.error exhausted and idle retries_exhausted', async (t) => {
  const { agent, env } = await agentAndEnv(s.client)
  const session = await s.client.beta.sessions.create({ agent: agent.id, environment_id: env.id } as any)
  const stream = await s.client.beta.sessions.events.stream(session.id)
  await s.client.beta.sessions.events.send(session.id, { events: [{ type: 'user.message', content: [{ type: 'text', text: 'anyone?' }] }] } as any)
  const events = await collect(stream, isIdle)
  t.same(
    events.map((e) => e.type),
    ['user.message', 'session.status_running', 'session.error', 'session.status_idle'],
  )
  const err = events[2].error
  t.same(err.retry_status, { type: 'exhausted' })
  t.type(err.type, 'string')
  t.match(err.message, 'TROUPE_MODEL_BASE_URL')
  t.same(events[3].stop_reason, { type: 'retries_exhausted' })
  const got = await s.client.beta.sessions.retrieve(session.id)
  t.equal(got.status, 'idle')

  // It stays usable: the next message ends the same way rather than wedging the session.
  const again = await s.client.beta.sessions.events.stream(session.id)
  await s.client.beta.sessions.events.send(session.id, { events: [{ type: 'user.message', content: [{ type: 'text', text: 'still?' }] }] } as any)
  const next = await collect(again, isIdle)
  t.same(next.at(-1).stop_reason, { type: 'retries_exhausted' })
})
