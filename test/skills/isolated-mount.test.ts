import { mkdtempSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { toFile } from '@anthropic-ai/sdk'
import t from 'tap'
import { isolatedOrSkip } from '../helpers/sandbox-backend.js'
import { agentAndEnv, collect, isIdle, sessionStack } from '../sessions/_helpers.js'

/**
 * A session's custom skills end to end on the isolated backend: uploaded through the API, pinned by the agent, and
 * there read-only at /workspace/skills/<name>/ for the session's tools, the Skill tool's base directory.
 */

const gate = isolatedOrSkip()
if (gate.skip) t.test('skills mounted in the isolated backend', { skip: gate.skip }, () => {})
else await suite()

async function suite() {
  const s = await sessionStack({ TROUPE_DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'troupe-skills-e2e-')), TROUPE_SANDBOX: 'isolated' })
  const textOf = (ev: any) => (ev.content as any[]).map((c) => c.text).join('')

  t.test('a tool reads the skill at /workspace/skills/<name>; nothing writes there', async (t) => {
    const files = await Promise.all([
      toFile(Buffer.from('---\nname: mounted\ndescription: A mounted skill.\n---\nBody.\n'), 'mounted/SKILL.md'),
      toFile(Buffer.from('reference text\n'), 'mounted/ref/notes.md'),
    ])
    const skill = await s.client.beta.skills.create({ files } as any)
    const { agent, env } = await agentAndEnv(s.client, { tools: [{ type: 'agent_toolset_20260401' }], skills: [{ type: 'custom', skill_id: skill.id }] })
    const session = await s.client.beta.sessions.create({ agent: agent.id, environment_id: env.id } as any)
    s.model.enqueue(
      { steps: [{ type: 'tool_use', name: 'bash', input: { command: 'cat /workspace/skills/mounted/ref/notes.md; touch /workspace/skills/mounted/x' } }] },
      { steps: [{ type: 'tool_use', name: 'read', input: { file_path: '/workspace/skills/mounted/SKILL.md' } }] },
      { steps: [{ type: 'text', text: 'done' }] },
    )
    const stream = await s.client.beta.sessions.events.stream(session.id)
    await s.client.beta.sessions.events.send(session.id, { events: [{ type: 'user.message', content: [{ type: 'text', text: 'go' }] }] } as any)
    const results = (await collect(stream, isIdle, 60_000)).filter((e) => e.type === 'agent.tool_result')
    t.match(textOf(results[0]), /^reference text\ntouch: cannot touch '\/workspace\/skills\/mounted\/x': Read-only file system/)
    t.notOk(results[1].is_error, textOf(results[1]))
    t.match(textOf(results[1]), /name: mounted/)
  })
}
