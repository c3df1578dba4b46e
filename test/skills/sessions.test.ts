import { toFile } from '@anthropic-ai/sdk'
import t from 'tap'
import { isolatedOrSkip } from '../helpers/sandbox-backend.js'
import { collect, failure, isIdle, sessionStack } from '../sessions/_helpers.js'

/**
 * Sessions run custom skills (issue 27, points 4 and 5): creation revalidates the effective list and pins it
 * (limits, distinct names, overrides resolved), a version a session pins is not deleted until the session is, and in
 * a session the model launches a skill through the private `Skill` tool: `Launching skill: <name>`, its SKILL.md
 * injected once after the launch's result, its files read-only under /workspace/skills/<name>/.
 */

const isolated = isolatedOrSkip()
const s = await sessionStack()
const { agents, skills, sessions, environments } = s.client.beta
const TOOLS = [{ type: 'agent_toolset_20260401' }]

const bundle = (name: string, description = `The ${name} skill.`, body = 'Follow the steps.') =>
  Promise.all([
    toFile(Buffer.from(`---\nname: ${name}\ndescription: ${description}\n---\n\n${body}\n`), `${name}/SKILL.md`),
    toFile(Buffer.from(`notes of ${name}\n`), `${name}/ref/notes.md`),
  ])
const newSkill = async (name: string, description?: string, body?: string) => skills.create({ files: await bundle(name, description, body) } as any)
const ref = (id: string, version?: string) => ({ type: 'custom', skill_id: id, ...(version ? { version } : {}) })
const agentWith = (refs: unknown[], extra: Record<string, unknown> = {}) =>
  agents.create({ name: 'skilled', model: 'claude-sonnet-4-5', tools: TOOLS, skills: refs, ...extra } as any)
const cloud = () => environments.create({ name: 'e' } as any)
const say = (text: string) => ({ type: 'user.message', content: [{ type: 'text', text }] })

/** Sends `events` with the live stream open; the events up to idle. */
async function step(id: string, events: unknown[]) {
  const stream = await sessions.events.stream(id)
  await sessions.events.send(id, { events } as any)
  return collect(stream, isIdle, 20_000)
}

t.test('creation pins the effective skills; a pinned version is deleted only once its session is', isolated, async (t) => {
  const skill = await newSkill('pinning')
  await skills.versions.create(skill.id, { files: await bundle('pinning', 'Second.') } as any)
  const agent = await agentWith([ref(skill.id, '1')])
  const env = await cloud()
  const session = await sessions.create({ agent: agent.id, environment_id: env.id } as any)
  t.same(session.agent.skills, [{ type: 'custom', skill_id: skill.id, version: '1' }], "the agent's pin")

  const overridden = await sessions.create({
    agent: { type: 'agent_with_overrides', id: agent.id, skills: [ref(skill.id, 'latest')] },
    environment_id: env.id,
  } as any)
  t.same(overridden.agent.skills, [{ type: 'custom', skill_id: skill.id, version: '2' }], "an override's latest, made concrete")
  const fetched = await sessions.retrieve(overridden.id)
  t.same(fetched.agent.skills, overridden.agent.skills, 'as stored')

  await agents.update(agent.id, { version: agent.version, skills: [ref(skill.id, '2')] } as any)
  const pinned = await failure(skills.versions.delete('1', { skill_id: skill.id }))
  t.equal(pinned.status, 409, 'the session still pins version 1 (its agent moved on)')
  t.match(pinned.error.error.message, new RegExp(`version 1 is pinned by session ${session.id}`))
  await sessions.archive(session.id)
  t.equal((await failure(skills.versions.delete('1', { skill_id: skill.id }))).status, 409, 'an archived session still pins')
  await sessions.delete(session.id)
  await skills.versions.delete('1', { skill_id: skill.id })
  t.pass('deleted once the session is gone')
  const gone = await failure(sessions.create({ agent: { type: 'agent', id: agent.id, version: 1 }, environment_id: env.id } as any))
  t.equal(gone.status, 404, "agent version 1's pin names a deleted version")
  t.match(gone.error.error.message, /^agent\.skills\[0\]: Skill skill_\w+ has no version 1$/)
})

t.test('creation refuses what a session cannot run, naming the field', isolated, async (t) => {
  const a = await newSkill('twin')
  const b = await newSkill('twin', 'Another skill with the same name.')
  const env = await cloud()
  const agent = await agentWith([ref(a.id)])
  const create = (overrides: Record<string, unknown>, environment_id = env.id) =>
    failure(sessions.create({ agent: { type: 'agent_with_overrides', id: agent.id, ...overrides }, environment_id } as any))

  const twins = await create({ skills: [ref(a.id), ref(b.id)] })
  t.equal(twins.status, 400)
  t.match(twins.error.error.message, /^agent\.skills\[1\]: its skill is named "twin", as is agent\.skills\[0\]/)
  const twice = await create({ skills: [ref(a.id), ref(a.id, '1')] })
  t.equal(twice.status, 400)
  t.match(twice.error.error.message, /^agent\.skills\[1\]\.skill_id: .* listed twice/)
  const missing = await create({ skills: [ref('skill_01JAAAAAAAAAAAAAAAAAAAAAAA')] })
  t.equal(missing.status, 404)
  t.match(missing.error.error.message, /^agent\.skills\[0\]: Skill skill_01JAAAAAAAAAAAAAAAAAAAAAAA not found/)
  const vendor = await create({ skills: [{ type: 'anthropic', skill_id: 'pdf' }] })
  t.equal(vendor.status, 422)
  const noRead = await create({ tools: [{ type: 'agent_toolset_20260401', configs: [{ name: 'read', enabled: false }] }] })
  t.equal(noRead.status, 400, 'an override of tools must keep read while skills run')
  t.match(noRead.error.error.message, /^agent\.skills: .*read/)
  const selfHosted = await environments.create({ name: 'sh', config: { type: 'self_hosted' } } as any)
  const remote = await failure(sessions.create({ agent: agent.id, environment_id: selfHosted.id } as any))
  t.equal(remote.status, 422)
  t.match(remote.error.error.message, /^agent\.skills: custom skills run only .* is self_hosted/)

  const cleared = await sessions.create({ agent: { type: 'agent_with_overrides', id: agent.id, skills: [] }, environment_id: env.id } as any)
  t.same(cleared.agent.skills, [], 'an empty override runs no skills')
  // The refused creates pinned b (twins) and took the pin back: nothing holds it, at once.
  t.equal((await create({ skills: [ref(b.id), ref('skill_01JAAAAAAAAAAAAAAAAAAAAAAA')] })).status, 404)
  await skills.versions.delete('1', { skill_id: b.id })
  t.pass("a refused create's pins do not hold the version")
})

t.test('the model launches a skill: Launching skill, SKILL.md injected once, files read-only on disk', isolated, async (t) => {
  const skill = await newSkill('greeter', 'Greets people warmly.', 'Always greet with "Ahoy".')
  const agent = await agentWith([ref(skill.id)])
  const env = await cloud()
  const session = await sessions.create({ agent: agent.id, environment_id: env.id } as any)
  const base = s.model.requests.length
  s.model.enqueue(
    { steps: [{ type: 'tool_use', name: 'Skill', input: { skill: 'greeter' } }] },
    { steps: [{ type: 'tool_use', name: 'read', input: { file_path: '/workspace/skills/greeter/ref/notes.md' } }] },
    { steps: [{ type: 'tool_use', name: 'bash', input: { command: 'touch /workspace/skills/greeter/x 2>&1; echo rc=$?' } }] },
    { steps: [{ type: 'tool_use', name: 'Skill', input: { skill: 'greeter' } }] },
    { steps: [{ type: 'tool_use', name: 'Skill', input: { skill: 'nobody' } }] },
    { steps: [{ type: 'text', text: 'Ahoy' }] },
  )
  const events = await step(session.id, [say('greet me')])
  const results = events.filter((e) => e.type === 'agent.tool_result')
  const uses = events.filter((e) => e.type === 'agent.tool_use')
  t.equal(uses[0].name, 'Skill')
  t.equal(uses[0].evaluated_permission, 'allow')
  t.same(results[0].content, [{ type: 'text', text: 'Launching skill: greeter' }])
  t.notOk(results[0].is_error)
  t.match(results[1].content[0].text, /notes of greeter/, 'the read tool reads a supporting file')
  t.match(results[2].content[0].text, /Read-only file system/, 'nothing writes there')
  t.same(results[3].content, [{ type: 'text', text: 'Launching skill: greeter' }])
  t.equal(results[4].is_error, true)
  t.match(results[4].content[0].text, /No skill is named "nobody"; call Skill with one of: greeter/)

  const requests = s.model.requests.slice(base)
  const tool = requests[0]!.body.tools.find((x: any) => x.name === 'Skill')
  t.match(tool.description, /- greeter: Greets people warmly\./, 'discovery: name and description')
  const injected = (r: any) =>
    (r.body.messages as any[])
      .flatMap((m) => (Array.isArray(m.content) ? m.content : []))
      .filter((c: any) => c.type === 'text' && /^Base directory for this skill/.test(c.text))
  t.equal(injected(requests[0]).length, 0, 'nothing before the launch')
  const after = injected(requests[1])
  t.equal(after.length, 1)
  t.match(after[0].text, /^Base directory for this skill: \/workspace\/skills\/greeter\n\n---\nname: greeter\n[\s\S]*Always greet with "Ahoy"\./)
  const launchMessage = requests[1]!.body.messages.at(-1)
  t.same(
    launchMessage.content.map((c: any) => c.type),
    ['tool_result', 'text'],
    'after the tool result, in the same user message',
  )
  t.equal(injected(requests[5]).length, 1, 'a second launch of the same skill injects nothing more')
})

t.test("a roster member's skills: pinned by the session, mounted under .agents/<member>/, launched in its thread", isolated, async (t) => {
  const skill = await newSkill('helping', 'Helps.', 'Say "helped".')
  const member = await agents.create({ name: 'helper', model: 'claude-sonnet-4-5', system: 'HELPER', tools: TOOLS, skills: [ref(skill.id)] } as any)
  const lead = await agents.create({
    name: 'lead',
    model: 'claude-sonnet-4-5',
    system: 'LEAD',
    tools: TOOLS,
    multiagent: { type: 'coordinator', agents: [member.id] },
  } as any)
  const env = await cloud()
  const session = await sessions.create({ agent: lead.id, environment_id: env.id } as any)
  const roster = (session.agent.multiagent as any).agents
  t.same(roster[0].skills, [{ type: 'custom', skill_id: skill.id, version: '1' }])
  await agents.archive(member.id)
  // Past the agent's pin grace: what holds the version now is the session.
  await new Promise((r) => setTimeout(r, 5_500))
  const held = await failure(skills.versions.delete('1', { skill_id: skill.id }))
  t.match(held.error.error.message, new RegExp(`pinned by session ${session.id}`))

  const dir = `/workspace/skills/.agents/${member.id}/helping`
  let helper = 0
  let leadTurns = 0
  const base = s.model.requests.length
  s.model.setHandler((req) => {
    if (req.body.system === 'HELPER') {
      helper++
      if (helper === 1) return { steps: [{ type: 'tool_use', name: 'Skill', input: { skill: 'helping' } }] }
      if (helper === 2) return { steps: [{ type: 'tool_use', name: 'read', input: { file_path: `${dir}/ref/notes.md` } }] }
      return { steps: [{ type: 'text', text: 'helped' }] }
    }
    if (req.body.system !== 'LEAD') return undefined
    return ++leadTurns === 1
      ? { steps: [{ type: 'tool_use', name: 'send_to_agent', input: { agent: 'helper', message: 'help' } }] }
      : { steps: [{ type: 'text', text: 'ok' }] }
  })
  t.teardown(() => s.model.setHandler(undefined))
  await step(session.id, [say('go')])
  const requests = s.model.requests.slice(base)
  const leadTools = requests.find((r) => r.body.system === 'LEAD')!.body.tools.map((x: any) => x.name)
  t.notOk(leadTools.includes('Skill'), 'the coordinator has no skills of its own: no Skill tool')
  const helperRequests = requests.filter((r) => r.body.system === 'HELPER')
  const skillTool = helperRequests[0]!.body.tools.find((x: any) => x.name === 'Skill')
  t.match(skillTool.description, /- helping: Helps\./)
  const texts = (r: any) =>
    (r.body.messages as any[])
      .flatMap((m) => (Array.isArray(m.content) ? m.content : []))
      .filter((c: any) => c.type === 'text')
      .map((c: any) => c.text)
  t.ok(
    texts(helperRequests[1]).some((x: string) => x.startsWith(`Base directory for this skill: ${dir}\n`)),
    'its base directory',
  )
  const results = (helperRequests[2]!.body.messages as any[])
    .flatMap((m) => (Array.isArray(m.content) ? m.content : []))
    .filter((c: any) => c.type === 'tool_result')
  t.match(JSON.stringify(results.at(-1)), /notes of helping/, 'its files read where the launch said')
})
