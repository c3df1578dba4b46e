import t from 'tap'
import { collect, isIdle, sessionStack } from '../sessions/_helpers.js'

/**
 * A session of a `multiagent_20261001` agent (issue 28 point 6) runs as a coordinator's: the snapshot captures
 * `subagents.predefined_agents` whole and the advisor, and the primary thread is offered `list_agents`,
 * `send_to_agent` (its predefined agents are the members) and the `advisor` tool.
 */

const s = await sessionStack()
const { agents, sessions, environments } = s.client.beta
const toolNames = (body: any) => ((body.tools ?? []) as any[]).map((x) => x.name)
const text = (e: any) => e.content.map((c: any) => c.text).join('')

t.test('the primary sends to a predefined agent and consults the advisor', async (t) => {
  const helper = await agents.create({ name: 'scout', model: 'claude-sonnet-4-5', system: 'SCOUT', description: 'Looks around.' } as any)
  const lead = await agents.create({
    name: 'captain',
    model: 'claude-sonnet-4-5',
    system: 'CAPTAIN',
    multiagent: {
      type: 'multiagent_20261001',
      advisor: { type: 'enabled', model: 'claude-opus-4-5' },
      subagents: { type: 'enabled', predefined_agents: [helper.id, { type: 'self' }] },
    },
  } as any)
  const env = await environments.create({ name: 'e' } as any)
  const session = await sessions.create({ agent: lead.id, environment_id: env.id } as any)

  const m: any = session.agent.multiagent
  t.equal(m.type, 'multiagent_20261001')
  t.same(m.advisor, { type: 'enabled', model: 'claude-opus-4-5' })
  t.same(m.workflows, { type: 'disabled' })
  t.same(m.subagents.inline_agents, { type: 'disabled' })
  t.match(m.subagents.predefined_agents, [
    { type: 'agent', id: helper.id, version: 1, name: 'scout', system: 'SCOUT', description: 'Looks around.', model: { id: 'claude-sonnet-4-5' }, tools: [] },
    { type: 'agent', id: lead.id, version: 1, name: 'captain', system: 'CAPTAIN' },
  ])
  t.ok(
    m.subagents.predefined_agents.every((a: any) => !('multiagent' in a) && 'execution_identity' in a && 'skills' in a),
    'full ThreadAgent definitions, without their own multiagent',
  )

  const base = s.model.requests.length
  let captain = 0
  s.model.setHandler((req) => {
    if (/^You are an advisor/.test(req.body.system ?? '')) return { steps: [{ type: 'text', text: 'advice: go north' }] }
    if (req.body.system === 'SCOUT') return { steps: [{ type: 'text', text: 'scouted' }] }
    if (req.body.system !== 'CAPTAIN') return undefined
    captain++
    if (captain === 1) {
      return {
        steps: [
          { type: 'tool_use', name: 'advisor', input: {} },
          { type: 'tool_use', name: 'list_agents', input: {} },
          { type: 'tool_use', name: 'send_to_agent', input: { agent: 'scout', message: 'look' } },
        ],
      }
    }
    return { steps: [{ type: 'text', text: 'done' }] }
  })
  t.teardown(() => s.model.setHandler(undefined))
  const stream = await sessions.events.stream(session.id)
  await sessions.events.send(session.id, { events: [{ type: 'user.message', content: [{ type: 'text', text: 'explore' }] }] } as any)
  const events = await collect(stream, isIdle, 30_000)
  t.equal(events.at(-1).stop_reason.type, 'end_turn')

  const uses = events.filter((e) => e.type === 'agent.tool_use')
  const results = uses.map((u) => events.find((e) => e.type === 'agent.tool_result' && e.tool_use_id === u.id))
  t.equal(text(results[0]), 'advice: go north', "the advisor's review")
  t.match(text(results[1]), /"name":"scout"/, 'list_agents names the predefined agents')
  t.match(text(results[1]), /"name":"captain"/, 'self among them')
  t.notMatch(text(results[1]), /advisor/, 'the advisor is not a member')
  t.equal(text(results[2]), 'scouted', "the send answered with the predefined agent's reply")
  const created = events.filter((e) => e.type === 'session.thread_created').map((e) => e.agent_name)
  t.same(created.sort(), ['scout', 'vendor.advisor'])

  const requests = s.model.requests.slice(base)
  const first = requests.find((r) => r.body.system === 'CAPTAIN')!
  t.same(
    toolNames(first.body)
      .filter((n: string) => ['advisor', 'list_agents', 'send_to_agent'].includes(n))
      .sort(),
    ['advisor', 'list_agents', 'send_to_agent'],
    "the primary's tools",
  )
  const scout = requests.find((r) => r.body.system === 'SCOUT')!
  t.notOk(
    toolNames(scout.body).some((n: string) => ['advisor', 'list_agents', 'send_to_agent'].includes(n)),
    'children get none (depth 1)',
  )
  const advice = requests.find((r) => /^You are an advisor/.test(r.body.system ?? ''))!
  t.equal(advice.body.model, 'claude-opus-4-5')
  t.notOk(advice.body.tools, 'tool-free')
})

t.test('advisor only: no delegation tools; subagents only: no advisor', async (t) => {
  const helper = await agents.create({ name: 'h', model: 'claude-sonnet-4-5', system: 'H' } as any)
  const adv = await agents.create({
    name: 'adv-only',
    model: 'claude-sonnet-4-5',
    system: 'ADVONLY',
    multiagent: { type: 'multiagent_20261001', advisor: { type: 'enabled', model: 'claude-opus-4-5' } },
  } as any)
  const subs = await agents.create({
    name: 'subs-only',
    model: 'claude-sonnet-4-5',
    system: 'SUBSONLY',
    multiagent: { type: 'multiagent_20261001', subagents: { type: 'enabled', predefined_agents: [helper.id] } },
  } as any)
  const env = await environments.create({ name: 'e' } as any)
  s.model.setHandler((req) => (['ADVONLY', 'SUBSONLY'].includes(req.body.system) ? { steps: [{ type: 'text', text: 'ok' }] } : undefined))
  t.teardown(() => s.model.setHandler(undefined))
  const tools: Record<string, string[]> = {}
  for (const a of [adv, subs]) {
    const session = await sessions.create({ agent: a.id, environment_id: env.id } as any)
    const base = s.model.requests.length
    const stream = await sessions.events.stream(session.id)
    await sessions.events.send(session.id, { events: [{ type: 'user.message', content: [{ type: 'text', text: 'hi' }] }] } as any)
    await collect(stream, isIdle, 30_000)
    const req = s.model.requests.slice(base).find((r) => r.body.system === a.system)!
    tools[a.name] = toolNames(req.body).filter((n: string) => ['advisor', 'list_agents', 'send_to_agent'].includes(n))
  }
  t.same(tools['adv-only'], ['advisor'])
  t.same(tools['subs-only'], ['list_agents', 'send_to_agent'])
})
