import { toFile } from '@anthropic-ai/sdk'
import t from 'tap'
import { stack } from '../helpers/stack.js'
import { failure } from '../sessions/_helpers.js'

/**
 * Agents pin skill versions (issue 27, point 4, and the deletion rule of point 3): a write resolves each custom
 * reference to a ready version (`latest` or omitted: the newest) and stores it; unrelated updates keep pins, replacing
 * `skills` re-resolves; a version an active agent pins is not deleted, one it no longer pins (moved on, archived) is.
 */

const s = await stack()
const { agents, skills } = s.client.beta
const TOOLS = [{ type: 'agent_toolset_20260401' }]

const bundle = (name: string, extra = '') =>
  Promise.all([
    toFile(Buffer.from(`---\nname: ${name}\ndescription: The ${name} skill.${extra}\n---\n\nBody.\n`), `${name}/SKILL.md`),
    toFile(Buffer.from('data\n'), `${name}/data.txt`),
  ])

t.test('agents resolve references to ready versions and pin them', async (t) => {
  const skill = await skills.create({ files: await bundle('pinned') } as any)
  const ref = (version?: unknown) => ({ type: 'custom', skill_id: skill.id, ...(version === undefined ? {} : { version }) })
  const a = await agents.create({ name: 'a', model: 'claude-sonnet-4-5', tools: TOOLS, skills: [ref()] } as any)
  t.same(a.skills, [{ type: 'custom', skill_id: skill.id, version: '1' }], 'omitted: the newest ready version, concrete')
  t.same((await agents.create({ name: 'b', model: 'claude-sonnet-4-5', tools: TOOLS, skills: [ref('latest')] } as any)).skills[0]?.version, '1')
  t.same((await agents.create({ name: 'c', model: 'claude-sonnet-4-5', tools: TOOLS, skills: [ref(1)] } as any)).skills[0]?.version, '1')

  const missing = await failure(agents.create({ name: 'd', model: 'claude-sonnet-4-5', tools: TOOLS, skills: [ref('7')] } as any))
  t.equal(missing.status, 404)
  t.match(missing.error.error.message, /^skills\[0\]: Skill skill_\w+ has no version 7$/)
  const twice = await failure(agents.create({ name: 'd', model: 'claude-sonnet-4-5', tools: TOOLS, skills: [ref(), ref('1')] } as any))
  t.equal(twice.status, 400)
  t.match(twice.error.error.message, /skills\[1\]\.skill_id: .* listed twice/)
  const noRead = await failure(agents.create({ name: 'd', model: 'claude-sonnet-4-5', skills: [ref()] } as any))
  t.equal(noRead.status, 400, 'an agent with skills must enable read')

  await skills.versions.create(skill.id, { files: await bundle('pinned', ' Now better.') })
  const renamed = await agents.update(a.id, { version: a.version, name: 'renamed' } as any)
  t.same(renamed.skills, a.skills, 'an unrelated update keeps the pin')
  const moved = await agents.update(a.id, { version: renamed.version, skills: [ref()] } as any)
  t.same(moved.skills, [{ type: 'custom', skill_id: skill.id, version: '2' }], 'replacing skills re-resolves')

  const refused = await failure(skills.versions.delete('2', { skill_id: skill.id }))
  t.equal(refused.status, 409)
  t.match(refused.error.error.message, /version 2 is pinned by agent agent_/)
})

t.test('a version is deleted once nothing pins it; a deleted version cannot be pinned', async (t) => {
  const skill = await skills.create({ files: await bundle('released') } as any)
  const ref = { type: 'custom', skill_id: skill.id }
  const a = await agents.create({ name: 'a', model: 'claude-sonnet-4-5', tools: TOOLS, skills: [ref] } as any)
  t.equal((await failure(skills.versions.delete('1', { skill_id: skill.id }))).status, 409)
  await agents.archive(a.id)
  // An archived agent pins nothing, from the moment its archive answers (its pin only a moment old).
  t.same(await skills.versions.delete('1', { skill_id: skill.id }), { id: '1', type: 'skill_version_deleted' }, 'deleted at once')
  const late = await failure(agents.create({ name: 'b', model: 'claude-sonnet-4-5', tools: TOOLS, skills: [ref] } as any))
  t.equal(late.status, 404, 'no ready version to pin')
})

t.test('a young pin of an agent that is not archived still holds', async (t) => {
  const skill = await skills.create({ files: await bundle('young') } as any)
  const ref = { type: 'custom', skill_id: skill.id }
  const a = await agents.create({ name: 'a', model: 'claude-sonnet-4-5', tools: TOOLS, skills: [ref] } as any)
  const b = await agents.create({ name: 'b', model: 'claude-sonnet-4-5', tools: TOOLS, skills: [ref] } as any)
  await agents.archive(a.id)
  const held = await failure(skills.versions.delete('1', { skill_id: skill.id }))
  t.equal(held.status, 409, "the other agent's pin holds")
  t.match(held.error.error.message, new RegExp(`pinned by agent ${b.id}`))
  await agents.archive(b.id)
  await skills.versions.delete('1', { skill_id: skill.id })
  t.pass('deleted once both are archived')
})
