import t from 'tap'
import { delegating, restarted, sent } from './_helpers.js'
import { isIdle, sessionStack, until } from '../sessions/_helpers.js'

/**
 * Threads at their edges (issue 28, points 2 and 4): a child's tool use awaiting the client parks the session with
 * that event (cross-posted with `session_thread_id`) and its answer resumes the child; an interrupt naming a child
 * stops only it (its send answers with an error and the coordinator goes on), one naming none stops every thread;
 * a host killed mid-child leaves a child that the next host resumes, never a second one for the send.
 */

const s = await sessionStack()
let client = s.client
const say = (text: string) => ({ type: 'user.message', content: [{ type: 'text', text }] })
const LOOKUP = { type: 'custom', name: 'lookup', description: 'Looks a key up.', input_schema: { type: 'object' } }

async function coordinator(members: Array<{ name: string; system: string; tools?: unknown[] }>, system = 'COORD') {
  const ids = []
  for (const m of members) ids.push((await client.beta.agents.create({ model: 'claude-sonnet-4-5', ...m } as any)).id)
  const lead = await client.beta.agents.create({ name: 'lead', model: 'claude-sonnet-4-5', system, multiagent: { type: 'coordinator', agents: ids } } as any)
  const env = await client.beta.environments.create({ name: 'e' } as any)
  return client.beta.sessions.create({ agent: lead.id, environment_id: env.id } as any)
}

const texts = (e: any) => (e.content as any[]).map((c) => c.text).join('')
async function all(id: string) {
  const out: any[] = []
  for await (const e of client.beta.sessions.events.list(id, { limit: 1000 } as any)) out.push(e)
  return out
}

t.test("a child's custom tool parks the session on it; the client's answer resumes the child", async (t) => {
  const session = await coordinator([{ name: 'finder', system: 'FINDER', tools: [LOOKUP] }])
  const lead = delegating('COORD', 'finder', 'find x', 'done')
  s.model.setHandler((req) => {
    const msgs = req.body.messages as any[]
    if (req.body.system === 'FINDER') {
      const answered = msgs.some((m) => Array.isArray(m.content) && m.content.some((c: any) => c.type === 'tool_result'))
      return answered ? { steps: [{ type: 'text', text: 'found 42' }] } : { steps: [{ type: 'tool_use', name: 'lookup', input: { k: 'x' } }] }
    }
    return lead(req)
  })
  t.teardown(() => s.model.setHandler(undefined))
  const r = await sent(client, session.id, [say('go')])
  const first = await r.next(isIdle, 30_000)
  const idle = first.at(-1)
  t.equal(idle.stop_reason.type, 'requires_action')
  const use = first.find((e) => e.type === 'agent.custom_tool_use')
  t.ok(use, 'the child’s tool use, cross-posted')
  t.match(use.session_thread_id, /^sthr_/)
  t.same(idle.stop_reason.event_ids, [use.id], 'the session waits on the child’s event')
  const thread = await client.beta.sessions.threads.retrieve(use.session_thread_id, { session_id: session.id })
  t.equal(thread.status, 'idle')

  await client.beta.sessions.events.send(session.id, {
    events: [{ type: 'user.custom_tool_result', custom_tool_use_id: use.id, content: [{ type: 'text', text: '42' }] }],
  } as any)
  const rest = await r.next(isIdle, 30_000)
  t.equal(rest.at(-1).stop_reason.type, 'end_turn')
  const result = rest.find((e) => e.type === 'agent.tool_result')
  t.equal(texts(result), 'found 42', "the send answers with the child's reply")
  const childEvents: any[] = []
  for await (const e of client.beta.sessions.threads.events.list(use.session_thread_id, { session_id: session.id })) childEvents.push(e)
  t.ok(
    childEvents.some((e) => e.type === 'agent.custom_tool_use' && e.id === use.id),
    'the same event on its own thread',
  )
})

t.test('an interrupt naming a child stops it alone; one naming none stops every thread', async (t) => {
  const session = await coordinator([
    { name: 'slow', system: 'SLOW' },
    { name: 'fast', system: 'FAST' },
  ])
  let lead = 0
  s.model.setHandler((req) => {
    if (req.body.system === 'SLOW') return { hang: true }
    if (req.body.system === 'FAST') return { steps: [{ type: 'text', text: 'quick' }] }
    if (req.body.system !== 'COORD') return undefined
    lead++
    if (lead === 1)
      return {
        steps: [
          { type: 'tool_use', name: 'send_to_agent', input: { agent: 'slow', message: 'a' } },
          { type: 'tool_use', name: 'send_to_agent', input: { agent: 'fast', message: 'b' } },
        ],
      }
    if (lead === 3) return { steps: [{ type: 'tool_use', name: 'send_to_agent', input: { agent: 'slow', message: 'c' } }] }
    return { steps: [{ type: 'text', text: `turn ${lead}` }] }
  })
  t.teardown(() => s.model.setHandler(undefined))
  const r = await sent(client, session.id, [say('go')])
  const started = await r.next((e) => e.type === 'session.thread_created' && e.agent_name === 'slow', 20_000)
  const slow = started.at(-1).session_thread_id
  await r.next((e) => e.type === 'agent.thread_message_received' && e.from_agent_name === 'fast', 20_000)
  await client.beta.sessions.events.send(session.id, { events: [{ type: 'user.interrupt', session_thread_id: slow }] } as any)
  const turn = await r.next(isIdle, 20_000)
  t.equal(turn.at(-1).stop_reason.type, 'end_turn', 'the coordinator went on')
  const results = turn.filter((e) => e.type === 'agent.tool_result')
  t.ok(
    results.some((e) => e.is_error && /slow was interrupted/.test(texts(e))),
    "the interrupted child's send",
  )
  t.ok(
    turn.some((e) => e.type === 'session.thread_status_idle' && e.session_thread_id === slow),
    'the child went idle',
  )
  t.equal((await client.beta.sessions.threads.retrieve(slow, { session_id: session.id })).status, 'idle')

  await client.beta.sessions.events.send(session.id, { events: [say('again')] } as any)
  const second = await r.next((e) => e.type === 'session.thread_created', 20_000)
  const again = second.at(-1).session_thread_id
  await r.next((e) => e.type === 'session.thread_status_running' && e.session_thread_id === again, 20_000)
  await client.beta.sessions.events.send(session.id, { events: [{ type: 'user.interrupt' }] } as any)
  const stopped = await r.next(isIdle, 20_000)
  t.equal(stopped.at(-1).stop_reason.type, 'end_turn')
  t.ok(
    stopped.some((e) => e.type === 'session.thread_status_idle' && e.session_thread_id === again),
    'every thread stopped',
  )
  const threads = await client.beta.sessions.threads.list(session.id)
  t.ok(
    threads.data.every((x: any) => x.status === 'idle'),
    'nothing left running',
  )
  const unknown = await client.beta.sessions.events
    .send(session.id, { events: [{ type: 'user.interrupt', session_thread_id: 'sthr_01JAAAAAAAAAAAAAAAAAAAAAAA' }] } as any)
    .catch((e) => e)
  t.equal(unknown.status, 404)
  t.match(unknown.error.error.message, /^events\[0\]\.session_thread_id: session sesn_\w+ has no thread/)
})

t.test('a host killed mid-child: the next host resumes that child, and the send answers once', async (t) => {
  const session = await coordinator([{ name: 'worker', system: 'WORKER' }])
  const lead = delegating('COORD', 'worker', 'long job', 'all good')
  let hang = true
  s.model.setHandler((req) => {
    if (req.body.system === 'WORKER') return hang ? { hang: true } : { steps: [{ type: 'text', text: 'finished' }] }
    return lead(req)
  })
  t.teardown(() => s.model.setHandler(undefined))
  const r = await sent(client, session.id, [say('go')])
  await r.next((e) => e.type === 'session.thread_status_running', 20_000)
  await until('the child’s request is stored as started', async () => {
    const threads = await client.beta.sessions.threads.list(session.id)
    const child = threads.data[1]
    if (!child) return false
    const events: any[] = []
    for await (const e of client.beta.sessions.threads.events.list(child.id, { session_id: session.id })) events.push(e)
    return events.some((e) => e.type === 'span.model_request_start')
  })
  hang = false
  client = await restarted(s)
  await until('the session is idle again', async () => (await client.beta.sessions.retrieve(session.id)).status === 'idle', 60_000)
  const events = await all(session.id)
  t.equal(events.filter((e) => e.type === 'session.thread_created').length, 1, 'one child for the send')
  const results = events.filter((e) => e.type === 'agent.tool_result')
  t.equal(results.length, 1, 'the send answered once')
  t.equal(texts(results[0]), 'finished', 'by the resumed child')
  t.ok(events.some((e) => e.type === 'session.status_rescheduled'))
  t.ok(
    events.some((e) => e.type === 'session.thread_status_rescheduled'),
    'the child was rescheduled',
  )
  t.equal(events.at(-1).type, 'session.status_idle')
  const child = (await client.beta.sessions.threads.list(session.id)).data[1]
  const childEvents: any[] = []
  for await (const e of client.beta.sessions.threads.events.list(child!.id, { session_id: session.id })) childEvents.push(e)
  const starts = childEvents.filter((e) => e.type === 'span.model_request_start').map((e) => e.id)
  t.same(
    childEvents.filter((e) => e.type === 'span.model_request_end').map((e) => e.model_request_start_id),
    starts,
    "every span of the child's is closed",
  )
})
