import { mkdtempSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import { descendantsOf, pidsOf } from '../helpers/procs.js'
import { isolatedOrSkip } from '../helpers/sandbox-backend.js'
import { agentAndEnv, collect, isIdle, sessionStack, until } from '../sessions/_helpers.js'

/**
 * An idle session leaves memory (passivation) and its sandbox goes with it: every process it started, a `setsid`
 * escapee included, is gone. The workspace stays on the host, so the next turn finds its files and is told of no move.
 * The idle times are shortened (TROUPE_SESSION_IDLE_MS, TROUPE_SESSION_SHELL_IDLE_MS; 30 s and 10 min by default).
 */

const gate = isolatedOrSkip()
if (gate.skip) t.test('passivation closes the sandbox', { skip: gate.skip }, () => {})
else await suite()

async function suite() {
  const s = await sessionStack({
    TROUPE_DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'troupe-passivate-')),
    TROUPE_SANDBOX: 'isolated',
    TROUPE_SESSION_IDLE_MS: '300',
    TROUPE_SESSION_SHELL_IDLE_MS: '1000',
  })
  /** The server's sandbox processes: bwrap (it execs in place of the launch shell) and everything under it. */
  const sandboxes = () => descendantsOf(s.troupe.proc.pid!).filter((p) => p.comm === 'bwrap').length

  async function turn(id: string, command: string) {
    s.model.enqueue({ steps: [{ type: 'tool_use', name: 'bash', input: { command } }] }, { steps: [{ type: 'text', text: 'done' }] })
    const stream = await s.client.beta.sessions.events.stream(id)
    await s.client.beta.sessions.events.send(id, { events: [{ type: 'user.message', content: [{ type: 'text', text: 'go' }] }] } as any)
    const events = await collect(stream, isIdle, 30_000)
    return (events.find((e) => e.type === 'agent.tool_result')!.content as any[]).map((c) => c.text).join('')
  }

  t.test('passivation closes the sandbox: its processes are gone, its workspace stays', async (t) => {
    const { agent, env } = await agentAndEnv(s.client, { tools: [{ type: 'agent_toolset_20260401' }] })
    const session = await s.client.beta.sessions.create({ agent: agent.id, environment_id: env.id } as any)
    const marker = `sleep 1006.${process.pid % 1000}`
    const out = await turn(session.id, `echo kept > kept.txt; (${marker} &); (setsid ${marker} > /dev/null 2>&1 &); echo started`)
    t.match(out, /started/)
    t.equal(pidsOf(marker).length, 2, 'a background job and a setsid escapee run')
    t.ok(sandboxes() >= 1, 'the session has a sandbox')
    await until('the session passivates and its sandbox processes are gone', () => pidsOf(marker).length === 0, 20_000, 100)
    t.equal(sandboxes(), 0, 'no sandbox left under the server')
    const after = await turn(session.id, 'cat kept.txt; pgrep -c sleep || true')
    t.match(after, /^kept\n0$/m, 'the workspace is there, and a new sandbox runs nothing of the old one')
    t.notMatch(after, /\[workspace\]/, 'no move to tell of')
  })
}
