import { toFile } from '@anthropic-ai/sdk'
import JSZip from 'jszip'
import t from 'tap'
import { isolatedOrSkip } from '../helpers/sandbox-backend.js'
import { collect, isIdle, sessionStack } from '../sessions/_helpers.js'

/**
 * Skill bundles keep their files' executable bit: a zip whose script is 0755 (as the vendor's public skills ship
 * theirs), uploaded through the official client as its one file, comes back 0755 in the download and is mounted r-x
 * in the session's bubblewrap sandbox, where `./script.sh` runs it; its other files stay 0644 and r--.
 */

const isolated = isolatedOrSkip()
const s = await sessionStack()
const { agents, skills, sessions, environments } = s.client.beta

const SKILL_MD = '---\nname: runner\ndescription: Runs its script.\n---\n\nRun scripts/hello.sh.\n'

async function zipWithScript(): Promise<Buffer> {
  const z = new JSZip()
  z.file('runner/SKILL.md', SKILL_MD, { unixPermissions: 0o100644 })
  z.file('runner/scripts/hello.sh', '#!/bin/sh\necho "ran $(basename "$0") directly"\n', { unixPermissions: 0o100755 })
  z.file('runner/scripts/notes.txt', 'not a program\n', { unixPermissions: 0o100644 })
  return z.generateAsync({ type: 'nodebuffer', platform: 'UNIX' })
}

t.test('a 0755 script: kept in the download, runnable in the sandbox', isolated, async (t) => {
  const skill = await skills.create({ files: [await toFile(await zipWithScript(), 'runner.zip')] } as any)
  t.match(skill, { id: /^skill_/, display_name: 'runner' }, 'the client sends the zip as its one files[] part')

  const res = await skills.versions.download('1', { skill_id: skill.id })
  const back = await JSZip.loadAsync(Buffer.from(await res.arrayBuffer()))
  t.same(Object.fromEntries(Object.values(back.files).map((f) => [f.name, f.unixPermissions])), {
    'runner/SKILL.md': 0o100644,
    'runner/scripts/hello.sh': 0o100755,
    'runner/scripts/notes.txt': 0o100644,
  })

  const agent = await agents.create({
    name: 'runs',
    model: 'claude-sonnet-4-6',
    tools: [{ type: 'agent_toolset_20260401' }],
    skills: [{ type: 'custom', skill_id: skill.id }],
  } as any)
  const env = await environments.create({ name: 'e' } as any)
  const session = await sessions.create({ agent: agent.id, environment_id: env.id } as any)
  const dir = '/workspace/skills/runner/scripts'
  s.model.enqueue(
    { steps: [{ type: 'tool_use', name: 'Skill', input: { skill: 'runner' } }] },
    { steps: [{ type: 'tool_use', name: 'bash', input: { command: `cd ${dir} && ./hello.sh && ls -l` } }] },
    { steps: [{ type: 'text', text: 'done' }] },
  )
  const stream = await sessions.events.stream(session.id)
  await sessions.events.send(session.id, { events: [{ type: 'user.message', content: [{ type: 'text', text: 'run it' }] }] } as any)
  const events = await collect(stream, isIdle, 30_000)
  const results = events.filter((e) => e.type === 'agent.tool_result')
  t.equal(results.length, 2)
  const out = (results[1].content as Array<{ text: string }>).map((c) => c.text).join('')
  t.equal(results[1].is_error, false, out)
  t.match(out, /^ran hello\.sh directly$/m, './hello.sh runs')
  t.match(out, /^-r-xr-xr-x .* hello\.sh$/m, 'mounted r-x')
  t.match(out, /^-r--r--r-- .* notes\.txt$/m, 'the rest r--')
})
