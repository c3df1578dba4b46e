import { mkdtempSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import { isolatedOrSkip } from '../helpers/sandbox-backend.js'
import { agentAndEnv, collect, isIdle, sessionStack } from '../sessions/_helpers.js'

/**
 * What a session may publish and save, through a real session: an output larger than TROUPE_FILE_MAX_MIB (1 MiB here)
 * is not published and the session is told with a `session.error`; a workspace past TROUPE_WORKSPACE_MAX_MIB (2 MiB)
 * is not saved and the tool result says so; a sparse file, which takes no disk, counts at its full length for both.
 */

const gate = isolatedOrSkip()
if (gate.skip) t.test('output and workspace caps', { skip: gate.skip }, () => {})
else await suite()

async function suite() {
  const s = await sessionStack({
    TROUPE_DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'troupe-caps-')),
    TROUPE_SANDBOX: 'isolated',
    TROUPE_FILE_MAX_MIB: '1',
    TROUPE_WORKSPACE_MAX_MIB: '2',
  })

  t.test('a sparse output past the cap is not published, and the session is told; a sparse workspace is not saved', async (t) => {
    const { agent, env } = await agentAndEnv(s.client, { tools: [{ type: 'agent_toolset_20260401' }] })
    const session = await s.client.beta.sessions.create({ agent: agent.id, environment_id: env.id } as any)
    const command =
      'truncate -s 5M /mnt/session/outputs/sparse.bin; truncate -s 3M /workspace/sparse.ws; echo small > /mnt/session/outputs/small.txt; du -k /mnt/session/outputs/sparse.bin /workspace/sparse.ws'
    s.model.enqueue({ steps: [{ type: 'tool_use', name: 'bash', input: { command } }] }, { steps: [{ type: 'text', text: 'done' }] })
    const stream = await s.client.beta.sessions.events.stream(session.id)
    await s.client.beta.sessions.events.send(session.id, { events: [{ type: 'user.message', content: [{ type: 'text', text: 'go' }] }] } as any)
    const events = await collect(stream, isIdle, 60_000)
    const result = events.find((e) => e.type === 'agent.tool_result')
    const said = (result.content as any[]).map((c) => c.text).join('')
    t.match(said, /^0\t\/mnt\/session\/outputs\/sparse\.bin\n0\t\/workspace\/sparse\.ws/m, 'neither file takes any disk')
    t.match(said, /The workspace holds more than 2 MiB of files \(TROUPE_WORKSPACE_MAX_MIB; a sparse file counts at its full length\), past what is saved/)
    const errors = events.filter((e) => e.type === 'session.error').map((e) => e.error.message)
    t.ok(
      errors.some((m) =>
        /The session output sparse\.bin \(5242880 bytes\) was not published as a File: a session output may be at most 1048576 bytes \(TROUPE_FILE_MAX_MIB\)/.test(
          m,
        ),
      ),
      `the session is told of the output (${errors.join(' | ')})`,
    )
    const files = []
    for await (const f of s.client.beta.files.list({ scope_id: session.id } as any)) files.push(f.filename)
    t.same(files, ['small.txt'], 'only the small output is a File')
  })
}
