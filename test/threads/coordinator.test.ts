import t from 'tap'
import { collect, isIdle, sessionStack } from '../sessions/_helpers.js'

/**
 * A coordinator delegates (issue 28, point 2): its primary thread is offered `list_agents` and `send_to_agent`; each
 * send runs a child thread with the member's snapshotted definition, the sends of one response at once, and the
 * child's final reply comes back as the send's result. Children get neither tool; their conversation stays on their
 * own thread, while the session's list carries the thread's creation, the messages between threads and the
 * children's statuses.
 */

const s = await sessionStack()
const { agents, sessions, environments } = s.client.beta

const lastUserText = (body: any) => {
  const last = body.messages.at(-1)
  return (last.content as any[])
    .filter((c) => c.type === 'text')
    .map((c) => c.text)
    .join('')
}
const toolNames = (body: any) => ((body.tools ?? []) as any[]).map((x) => x.name)

t.test('sends run children at once, each answering its send; children cannot delegate', async (t) => {
  const helper = await agents.create({ name: 'helper', model: 'claude-sonnet-4-5', system: 'MEMBER', description: 'Does small tasks.' } as any)
  const lead = await agents.create({
    name: 'lead',
    model: 'claude-sonnet-4-5',
    system: 'COORD',
    multiagent: { type: 'coordinator', agents: [helper.id] },
  } as any)
  const env = await environments.create({ name: 'e' } as any)
  const session = await sessions.create({ agent: lead.id, environment_id: env.id } as any)
  const base = s.model.requests.length
  let coordinatorTurns = 0
  s.model.setHandler((req) => {
    if (req.body.system === 'MEMBER') return { steps: [{ type: 'text', text: `did ${lastUserText(req.body)}` }], delayMs: 400 }
    if (req.body.system !== 'COORD') return undefined
    coordinatorTurns++
    if (coordinatorTurns === 1) {
      return {
        steps: [
          { type: 'tool_use', name: 'list_agents', input: {} },
          { type: 'tool_use', name: 'send_to_agent', input: { agent: 'helper', message: 'one' } },
          { type: 'tool_use', name: 'send_to_agent', input: { agent: 'helper', message: 'two' } },
          { type: 'tool_use', name: 'send_to_agent', input: { agent: 'nobody', message: 'three' } },
        ],
      }
    }
    return { steps: [{ type: 'text', text: 'all done' }] }
  })
  t.teardown(() => s.model.setHandler(undefined))

  const stream = await sessions.events.stream(session.id)
  await sessions.events.send(session.id, { events: [{ type: 'user.message', content: [{ type: 'text', text: 'go' }] }] } as any)
  const events = await collect(stream, isIdle, 30_000)
  const types = events.map((e) => e.type)
  t.equal(events.at(-1).stop_reason.type, 'end_turn')
  t.equal(types.filter((x) => x === 'session.thread_created').length, 2, 'a child per send')
  const created = events.filter((e) => e.type === 'session.thread_created')
  t.ok(created.every((e) => /^sthr_/.test(e.session_thread_id) && e.agent_name === 'helper' && e.workflow_run_id === null))
  t.equal(types.filter((x) => x === 'agent.thread_message_sent').length, 2)
  t.equal(types.filter((x) => x === 'agent.thread_message_received').length, 2)
  t.ok(types.includes('session.thread_status_running') && types.includes('session.thread_status_idle'), "children's statuses")
  t.notOk(
    events.some((e) => e.type === 'agent.message' && /did /.test(e.content[0].text)),
    "children's own messages stay on their threads",
  )

  const results = events.filter((e) => e.type === 'agent.tool_result')
  const text = (e: any) => e.content.map((c: any) => c.text).join('')
  t.match(text(results.find((r) => /helper/.test(text(r)) && /Does small tasks/.test(text(r)))), /"name":"helper"/, 'list_agents')
  const answers = results.map(text)
  t.ok(answers.includes('did one') && answers.includes('did two'), 'each send answered with its child’s reply')
  const unknown = results.find((r) => r.is_error)
  t.match(text(unknown), /No agent is named "nobody"/)

  const requests = s.model.requests.slice(base)
  const members = requests.filter((r) => r.body.system === 'MEMBER')
  t.equal(members.length, 2)
  t.ok(
    members.every((r) => !toolNames(r.body).includes('send_to_agent') && !toolNames(r.body).includes('list_agents')),
    'depth 1',
  )
  t.ok(Math.abs(members[0]!.at - members[1]!.at) < 350, 'both sends ran at once')
  const coord = requests.filter((r) => r.body.system === 'COORD')
  t.same(
    toolNames(coord[0]!.body).filter((n: string) => n === 'send_to_agent' || n === 'list_agents'),
    ['list_agents', 'send_to_agent'],
  )

  const again = await sessions.retrieve(session.id)
  t.equal(again.status, 'idle')
  t.ok((again.usage.input_tokens ?? 0) >= 40, `usage sums every thread's (${again.usage.input_tokens})`)
})

t.test('threads: list, get, events and stream of each; archive a child, not the primary', async (t) => {
  const helper = await agents.create({ name: 'worker', model: 'claude-sonnet-4-5', system: 'WORKER' } as any)
  const lead = await agents.create({
    name: 'boss',
    model: 'claude-sonnet-4-5',
    system: 'BOSS',
    multiagent: { type: 'coordinator', agents: [helper.id] },
  } as any)
  const env = await environments.create({ name: 'e' } as any)
  const session = await sessions.create({ agent: lead.id, environment_id: env.id } as any)
  let bossTurns = 0
  s.model.setHandler((req) => {
    if (req.body.system === 'WORKER') return { steps: [{ type: 'text', text: 'worked' }] }
    if (req.body.system !== 'BOSS') return undefined
    return ++bossTurns % 2 === 1
      ? { steps: [{ type: 'tool_use', name: 'send_to_agent', input: { agent: 'worker', message: 'work' } }] }
      : { steps: [{ type: 'text', text: 'ok' }] }
  })
  t.teardown(() => s.model.setHandler(undefined))
  const stream = await sessions.events.stream(session.id)
  await sessions.events.send(session.id, { events: [{ type: 'user.message', content: [{ type: 'text', text: 'go' }] }] } as any)
  const events = await collect(stream, isIdle, 30_000)
  const childId = events.find((e) => e.type === 'session.thread_created').session_thread_id

  const threads = s.client.beta.sessions.threads
  const list: any[] = []
  for await (const th of threads.list(session.id, { limit: 1 } as any)) list.push(th)
  t.equal(list.length, 2, 'paged one at a time')
  const [primary, child] = list
  t.match(primary, { type: 'session_thread', session_id: session.id, parent_thread_id: null, status: 'idle', workflow_run_id: null })
  t.equal(primary.id, `sthr_${session.id.slice('sesn_'.length)}`, "the primary's id derives from the session's")
  t.equal(primary.agent.name, 'boss')
  t.notOk('multiagent' in primary.agent)
  t.match(child, { id: childId, parent_thread_id: primary.id, status: 'idle', agent: { id: helper.id, name: 'worker' } })
  t.ok(child.usage.input_tokens > 0 && child.stats.duration_seconds >= 0)
  t.same((await threads.retrieve(childId, { session_id: session.id })).id, childId)
  const idle = await threads.list(session.id, { statuses: ['running'] } as any)
  t.same(idle.data, [], 'statuses[] filters')

  const childEvents: any[] = []
  for await (const e of threads.events.list(childId, { session_id: session.id })) childEvents.push(e)
  t.same(
    childEvents.map((e) => e.type),
    [
      'agent.thread_message_received',
      'session.thread_status_running',
      'span.model_request_start',
      'agent.message',
      'span.model_request_end',
      'session.thread_status_idle',
      'agent.thread_message_sent',
    ],
    "the child's own conversation",
  )
  t.same(childEvents[0].content, [{ type: 'text', text: 'work' }])
  const primaryEvents: any[] = []
  for await (const e of threads.events.list(primary.id, { session_id: session.id })) primaryEvents.push(e)
  const sessionEvents: any[] = []
  for await (const e of sessions.events.list(session.id)) sessionEvents.push(e)
  t.same(
    primaryEvents.map((e) => e.id),
    sessionEvents.map((e) => e.id),
    "the primary's events are the session's",
  )

  // A child's stream replays what follows an event id (Last-Event-ID), on its own subject.
  const tail = await threads.events.stream(childId, { session_id: session.id }, { headers: { 'Last-Event-ID': childEvents[0].id } })
  const seen = await collect(tail, (e) => e.type === 'agent.thread_message_sent', 10_000)
  t.same(
    seen.map((e) => e.type),
    childEvents.slice(1).map((e) => e.type),
    'the stream replays the thread',
  )

  const nope = await s.client.beta.sessions.threads.archive(primary.id, { session_id: session.id }).catch((e) => e)
  t.equal(nope.status, 400)
  const archived = await threads.archive(childId, { session_id: session.id })
  t.equal(archived.status, 'terminated')
  t.ok(archived.archived_at)
  const missing = await threads.retrieve('sthr_01JAAAAAAAAAAAAAAAAAAAAAAA', { session_id: session.id }).catch((e) => e)
  t.equal(missing.status, 404)
  t.match(missing.error.error.message, /thread_id: session sesn_\w+ has no thread sthr_01JAAAAAAAAAAAAAAAAAAAAAAA/)
})

t.test('the advisor: a no-argument tool of the primary, one tool-free request on its model over the conversation', async (t) => {
  const helper = await agents.create({ name: 'aide', model: 'claude-sonnet-4-5', system: 'AIDE' } as any)
  const lead = await agents.create({
    name: 'chief',
    model: 'claude-sonnet-4-5',
    system: 'CHIEF',
    multiagent: { type: 'coordinator', agents: [helper.id, { type: 'advisor', model: 'claude-opus-4-5' }] },
  } as any)
  const env = await environments.create({ name: 'e' } as any)
  const session = await sessions.create({ agent: lead.id, environment_id: env.id } as any)
  const base = s.model.requests.length
  let chief = 0
  s.model.setHandler((req) => {
    if (/^You are an advisor/.test(req.body.system ?? '')) return { steps: [{ type: 'text', text: 'review: check the edge cases' }] }
    if (req.body.system !== 'CHIEF') return undefined
    chief++
    if (chief === 1)
      return {
        steps: [
          { type: 'tool_use', name: 'advisor', input: {} },
          { type: 'tool_use', name: 'list_agents', input: {} },
          { type: 'tool_use', name: 'send_to_agent', input: { agent: 'vendor.advisor', message: 'x' } },
        ],
      }
    return { steps: [{ type: 'text', text: 'thanks' }] }
  })
  t.teardown(() => s.model.setHandler(undefined))
  const stream = await sessions.events.stream(session.id)
  await sessions.events.send(session.id, { events: [{ type: 'user.message', content: [{ type: 'text', text: 'plan the release' }] }] } as any)
  const events = await collect(stream, isIdle, 30_000)
  const text = (e: any) => e.content.map((c: any) => c.text).join('')
  // Results in the order of the calls they answer (delegations run first, together).
  const uses = events.filter((e) => e.type === 'agent.tool_use')
  const results = uses.map((u) => events.find((e) => e.type === 'agent.tool_result' && e.tool_use_id === u.id))
  t.equal(text(results[0]), 'review: check the edge cases', "the review is the call's result")
  t.notMatch(text(results[1]), /advisor/, 'not in list_agents')
  t.ok(results[2].is_error, 'not a send target')
  const created = events.find((e) => e.type === 'session.thread_created')
  t.equal(created.agent_name, 'vendor.advisor')

  const requests = s.model.requests.slice(base)
  const advisorRequest = requests.find((r) => /^You are an advisor/.test(r.body.system ?? ''))!
  t.equal(advisorRequest.body.model, 'claude-opus-4-5', "the advisor's model")
  t.notOk(advisorRequest.body.tools, 'tool-free')
  t.match(lastUserText(advisorRequest.body), /The conversation so far:[\s\S]*plan the release/)
  const chiefTools = toolNames(requests.find((r) => r.body.system === 'CHIEF')!.body)
  t.ok(chiefTools.includes('advisor'))
  const thread = await s.client.beta.sessions.threads.retrieve(created.session_thread_id, { session_id: session.id })
  t.same(thread.agent, { type: 'advisor', model: 'claude-opus-4-5' })
  t.ok((thread.usage?.input_tokens ?? 0) > 0, "the advisor's usage is counted")
})
