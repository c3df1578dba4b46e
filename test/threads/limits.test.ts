import t from 'tap'
import { delegating, restarted, sent } from './_helpers.js'
import { isIdle, sessionStack, until } from '../sessions/_helpers.js'

/**
 * One budget for every thread, and passes that survive their host (issue 28, points 4 and 7): a child that reaches
 * the session's budget pauses it (`budget_reached` on the session too), and raising the budget resumes the child and
 * its send; a grader pass in flight when its host is killed is run again by the next host under the same span, and
 * ends once.
 */

const s = await sessionStack()
let client = s.client
const say = (text: string) => ({ type: 'user.message', content: [{ type: 'text', text }] })
const TOOLSET = [{ type: 'agent_toolset_20260401' }]

async function all(id: string) {
  const out: any[] = []
  for await (const e of client.beta.sessions.events.list(id, { limit: 1000 } as any)) out.push(e)
  return out
}

t.test('a child at the budget pauses the session; raising it resumes the child and its send', async (t) => {
  const member = await client.beta.agents.create({ name: 'spender', model: 'claude-sonnet-4-5', system: 'SPENDER', tools: TOOLSET } as any)
  const lead = await client.beta.agents.create({
    name: 'lead',
    model: 'claude-sonnet-4-5',
    system: 'LEAD',
    multiagent: { type: 'coordinator', agents: [member.id] },
  } as any)
  const env = await client.beta.environments.create({ name: 'e' } as any)
  const session = await client.beta.sessions.create({
    agent: lead.id,
    environment_id: env.id,
    budget: { type: 'limit', max_list_cost: { amount: '1', currency: 'USD' } },
  } as any)
  let spender = 0
  const coordinator = delegating('LEAD', 'spender', 'spend', 'ok')
  s.model.setHandler((req) => {
    if (req.body.system === 'SPENDER') {
      spender++
      return spender === 1
        ? { steps: [{ type: 'tool_use', name: 'bash', input: { command: 'echo spent' } }], usage: { input_tokens: 1_000_000, output_tokens: 0 } }
        : { steps: [{ type: 'text', text: 'finished after all' }] }
    }
    return coordinator(req)
  })
  t.teardown(() => s.model.setHandler(undefined))
  const r = await sent(client, session.id, [say('go')])
  const paused = await r.next(isIdle, 30_000)
  t.equal(paused.at(-1).stop_reason.type, 'budget_reached', 'the session pauses at the budget')
  t.ok(paused.some((e) => e.type === 'session.usage'))
  t.ok(
    paused.some((e) => e.type === 'session.thread_status_idle' && e.stop_reason.type === 'budget_reached'),
    'the child paused there',
  )
  t.equal(spender, 1, 'no model request past the budget')

  await client.beta.sessions.update(session.id, { budget: { type: 'limit', max_list_cost: { amount: '100000', currency: 'USD' } } } as any)
  const resumed = await r.next(isIdle, 30_000)
  t.equal(resumed.at(-1).stop_reason.type, 'end_turn')
  const result = resumed.find((e) => e.type === 'agent.tool_result')
  t.equal(result.content[0].text, 'finished after all', 'the same child finished, and its send answered')
  t.equal((await all(session.id)).filter((e) => e.type === 'session.thread_created').length, 1)
})

t.test('a grader pass cut by its host dying is run again by the next, under the same span', async (t) => {
  const agent = await client.beta.agents.create({ name: 'writer', model: 'claude-sonnet-4-5', system: 'WRITER' } as any)
  const env = await client.beta.environments.create({ name: 'e' } as any)
  const session = await client.beta.sessions.create({ agent: agent.id, environment_id: env.id } as any)
  let hang = true
  s.model.setHandler((req) => {
    if (/^You grade the work/.test(req.body.system ?? '')) {
      return hang ? { hang: true } : { steps: [{ type: 'text', text: '{"result":"satisfied","explanation":"fine"}' }] }
    }
    return req.body.system === 'WRITER' ? { steps: [{ type: 'text', text: 'written' }] } : undefined
  })
  t.teardown(() => s.model.setHandler(undefined))
  const r = await sent(client, session.id, [{ type: 'user.define_outcome', description: 'write', rubric: { type: 'text', content: 'anything' } }])
  await r.next((e) => e.type === 'span.outcome_evaluation_start', 20_000)
  await until('the span start is stored', async () => (await all(session.id)).some((e) => e.type === 'span.outcome_evaluation_start'))
  hang = false
  client = await restarted(s)
  await until('the session is idle again', async () => (await client.beta.sessions.retrieve(session.id)).status === 'idle', 60_000)
  const events = await all(session.id)
  const starts = events.filter((e) => e.type === 'span.outcome_evaluation_start')
  const ends = events.filter((e) => e.type === 'span.outcome_evaluation_end')
  t.equal(starts.length, 1, 'one pass')
  t.equal(ends.length, 1, 'ended once')
  t.equal(ends[0].outcome_evaluation_start_id, starts[0].id)
  t.equal(ends[0].result, 'satisfied')
  t.equal(((await client.beta.sessions.retrieve(session.id)).outcome_evaluations as any[])[0].result, 'satisfied')
})
