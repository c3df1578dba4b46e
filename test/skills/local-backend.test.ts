import { toFile } from '@anthropic-ai/sdk'
import t from 'tap'
import { failure, sessionStack, until } from '../sessions/_helpers.js'

/**
 * SPEC session create rule 9: custom skills run only where tools run in a container-backed sandbox. A server whose
 * sessions run tools on the local backend refuses, at creation, a session that would run skills, saying why; the same
 * agent with its skills overridden away is admitted.
 */

const s = await sessionStack({ TROUPE_SANDBOX: 'local' })
const { agents, skills, sessions, environments } = s.client.beta

t.test('the local backend refuses sessions with skills at admission', async (t) => {
  const files = [toFile(Buffer.from('---\nname: local\ndescription: A skill.\n---\nBody.\n'), 'local/SKILL.md')]
  const skill = await skills.create({ files: await Promise.all(files) } as any)
  const agent = await agents.create({
    name: 'a',
    model: 'claude-sonnet-4-5',
    tools: [{ type: 'agent_toolset_20260401' }],
    skills: [{ type: 'custom', skill_id: skill.id }],
  } as any)
  const env = await environments.create({ name: 'e' } as any)
  const r = await failure(sessions.create({ agent: agent.id, environment_id: env.id } as any))
  t.equal(r.status, 422)
  t.match(r.error.error.message, /^agent\.skills: custom skills run only in sessions whose tools run in an isolated .*local backend/)
  const without = await sessions.create({ agent: { type: 'agent_with_overrides', id: agent.id, skills: null }, environment_id: env.id } as any)
  t.same(without.agent.skills, [])
  // The agent pins it (for 5 s even once archived); the refused session does not.
  await agents.archive(agent.id)
  await until(
    'the version to be deleted',
    () =>
      skills.versions.delete('1', { skill_id: skill.id }).then(
        () => true,
        () => false,
      ),
    20_000,
    500,
  )
  t.pass('the refusal pinned nothing')
})
