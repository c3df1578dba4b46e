import { existsSync } from 'node:fs'
import path from 'node:path'
import t from 'tap'
import '../helpers/keepalive.js'
import { sharedTmp } from '../helpers/sandbox-backend.js'
import { clientFor, settledLogLines } from '../helpers/troupe.js'
import { reader, sessionStack, until } from '../sessions/_helpers.js'

// A host paused past its heartbeat's margin with nobody to take its partitions (a busy machine, a short stall) claims
// them back when it resumes, and its actors carry on: the tool that finished during the pause has its own result
// stored, not "the host stopped before the tool finished". (Where another host takes over meanwhile, the resumed one
// writes nothing: session-failover.test.ts.)

const s = await sessionStack()

t.test('paused while a tool runs, alone: on resume the tool result is stored as it ran and the turn ends', async (t) => {
  const client = clientFor(s.url, { maxRetries: 6 })
  const agent = await client.beta.agents.create({ name: 'p', model: 'claude-sonnet-4-5', tools: [{ type: 'agent_toolset_20260401' }] } as any)
  const environment = await client.beta.environments.create({ name: 'p' })
  const session = await client.beta.sessions.create({ agent: agent.id, environment_id: environment.id } as any)
  const tmp = sharedTmp(s.troupe.proc.pid!, session.id)
  const marker = path.join(tmp.host, `troupe-pause-${session.id}`)
  const inside = path.posix.join(tmp.inside, `troupe-pause-${session.id}`)
  s.model.enqueue(
    { steps: [{ type: 'tool_use', name: 'bash', input: { command: `touch ${inside}.start && sleep 1 && echo ran > ${inside} && echo finished` } }] },
    { steps: [{ type: 'text', text: 'noted' }] },
  )
  const stream = reader(await client.beta.sessions.events.stream(session.id))
  await client.beta.sessions.events.send(session.id, { events: [{ type: 'user.message', content: [{ type: 'text', text: 'run it' }] }] } as any)
  await until('the tool started', () => existsSync(`${marker}.start`), 20_000)
  // Paused past the heartbeat's TTL (2 s): the tool (a child process) finishes meanwhile, and the host wakes up with
  // its result and a heartbeat that lapsed.
  s.troupe.signal('SIGSTOP')
  let resumed = false
  t.teardown(() => {
    if (!resumed) s.troupe.signal('SIGCONT')
  })
  await until('the tool ran', () => existsSync(marker), 20_000)
  await new Promise((r) => setTimeout(r, 3000))
  s.troupe.signal('SIGCONT')
  resumed = true
  const result = (await stream.next((e) => e.type === 'agent.tool_result', 30_000)).at(-1)
  t.notOk(result.is_error, 'not an error')
  t.match(result.content[0].text, /finished/, 'the result the tool gave')
  await stream.next((e) => e.type === 'session.status_idle' && e.stop_reason?.type === 'end_turn', 30_000)
  const lines = (await settledLogLines(s.troupe)).map((l) => l.msg)
  t.ok(
    lines.some((m) => /heartbeat not acknowledged in time/.test(String(m))),
    'the heartbeat lapsed',
  )
  t.ok(lines.includes('serving resumed after a heartbeat gap or a reconnect'), 'the host claimed its partitions back')
})
