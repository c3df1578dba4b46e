import t from 'tap'
import { startFakeMcpServer } from '../fakes/mcp-server.js'
import { isIdle, reader, sessionStack, until, newSession as newSessionOf, step as stepOf } from './_helpers.js'

/**
 * MCP toolsets in sessions (issue 43 point 1): an agent's MCP servers' tools offered to the model beside the built-in
 * ones, called through the session's connection (`agent.mcp_tool_use`, `agent.mcp_tool_result`), parked for
 * confirmation under `always_ask`, cancelled by an interrupt, and a server that cannot be used reported while the turn
 * goes on without it. Through the official client against `troupe serve`, a fake model and a local MCP server.
 */

// The local MCP servers are on loopback, which the operator must allow (issue 43 point 4).
const s = await sessionStack({ TROUPE_MCP_ALLOW_HOSTS: '127.0.0.1' })
const mcp = await startFakeMcpServer()
const sseOnly = await startFakeMcpServer({ sse: true })
t.teardown(async () => {
  await mcp.close()
  await sseOnly.close()
})

const ALLOW = { permission_policy: { type: 'always_allow' } }
const toolset = (server: string, more: Record<string, unknown> = {}) => ({ type: 'mcp_toolset', mcp_server_name: server, ...more })
const server = (name: string, url: string) => ({ type: 'url', name, url })

const newSession = (agent: Record<string, unknown>) => newSessionOf(s.client, agent)
const step = (id: string, events: any[], until?: (e: any, all: any[]) => boolean) => stepOf(s.client, id, events, until)

const say = (text: string) => ({ type: 'user.message', content: [{ type: 'text', text }] })
const of = (events: any[], type: string) => events.filter((e) => e.type === type)
const toolNames = (req: { body: any }) => ((req.body.tools ?? []) as any[]).map((d) => d.name)

t.test('an MCP server’s tools are offered, called and answered', async (t) => {
  const session = await newSession({ mcp_servers: [server('local', mcp.url)], tools: [toolset('local', { default_config: ALLOW })] })
  const base = s.model.requests.length
  const callsBefore = mcp.calls.length
  s.model.enqueue({ steps: [{ type: 'tool_use', name: 'echo', input: { text: 'hello there' } }] }, { steps: [{ type: 'text', text: 'done' }] })
  const events = await step(session.id, [say('echo it')])
  t.same(
    events.map((e) => e.type),
    [
      'user.message',
      'session.status_running',
      'span.model_request_start',
      'agent.mcp_tool_use',
      'span.model_request_end',
      'agent.mcp_tool_result',
      'span.model_request_start',
      'agent.message',
      'span.model_request_end',
      'session.status_idle',
    ],
  )
  const [use] = of(events, 'agent.mcp_tool_use')
  const [result] = of(events, 'agent.mcp_tool_result')
  t.match(use, { mcp_server_name: 'local', name: 'echo', input: { text: 'hello there' }, evaluated_permission: 'allow', evaluation: { type: 'always_allow' } })
  t.match(result, { mcp_tool_use_id: use.id, content: [{ type: 'text', text: 'hello there' }] })
  t.notOk(result.is_error)
  t.equal(mcp.calls.length, callsBefore + 1)

  const first = s.model.requests[base]!.body
  const echo = (first.tools as any[]).find((d) => d.name === 'echo')
  t.same(echo, {
    name: 'echo',
    description: 'Echoes text back.',
    input_schema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  })
  t.same(toolNames(s.model.requests[base]!).sort(), ['echo', 'fail', 'sleep'])
  const second = s.model.requests[base + 1]!.body
  t.match(second.messages.at(-2), { role: 'assistant', content: [{ type: 'tool_use', id: use.id, name: 'echo' }] })
  t.same(second.messages.at(-1).content, [{ type: 'tool_result', tool_use_id: use.id, content: [{ type: 'text', text: 'hello there' }] }])

  // The next turn reuses the session's connection, and the cached list.
  const connections = mcp.connections
  s.model.enqueue({ steps: [{ type: 'tool_use', name: 'fail', input: {} }] }, { steps: [{ type: 'text', text: 'it failed' }] })
  const again = await step(session.id, [say('now fail')])
  t.match(of(again, 'agent.mcp_tool_result')[0], { is_error: true, content: [{ type: 'text', text: 'it failed, as it always does' }] })
  t.equal(mcp.connections, connections, 'no new connection for the next turn')
})

t.test('names: built-in and custom tools keep theirs; tools two servers share are offered as <server>__<tool>; an SSE-only server works', async (t) => {
  const session = await newSession({
    mcp_servers: [server('first', mcp.url), server('second', sseOnly.url)],
    tools: [
      { type: 'agent_toolset_20260401' },
      { type: 'custom', name: 'sleep', description: 'A client tool of the same name.', input_schema: { type: 'object' } },
      toolset('first', { default_config: ALLOW }),
      toolset('second', { default_config: ALLOW }),
    ],
  })
  const base = s.model.requests.length
  const sseCalls = sseOnly.calls.length
  s.model.enqueue({ steps: [{ type: 'tool_use', name: 'second__echo', input: { text: 'via sse' } }] }, { steps: [{ type: 'text', text: 'ok' }] })
  const events = await step(session.id, [say('go')])
  const names = toolNames(s.model.requests[base]!)
  for (const n of ['bash', 'read', 'sleep', 'first__echo', 'second__echo', 'first__sleep', 'second__sleep', 'first__fail', 'second__fail']) {
    t.ok(names.includes(n), `${n} offered`)
  }
  t.equal(new Set(names).size, names.length, 'every name once')
  t.match(of(events, 'agent.mcp_tool_use')[0], { mcp_server_name: 'second', name: 'echo' })
  t.match(of(events, 'agent.mcp_tool_result')[0], { content: [{ type: 'text', text: 'via sse' }] })
  t.equal(sseOnly.calls.length, sseCalls + 1)
  // The conversation names the past call as it was offered.
  t.match(s.model.requests[base + 1]!.body.messages.at(-2), { content: [{ type: 'tool_use', name: 'second__echo' }] })
})

t.test('always_ask (the default) parks for user.tool_confirmation; allow runs, deny answers with the deny message', async (t) => {
  const session = await newSession({
    mcp_servers: [server('local', mcp.url)],
    tools: [toolset('local', { configs: [{ name: 'fail', enabled: false }] })],
  })
  const base = s.model.requests.length
  s.model.enqueue({ steps: [{ type: 'tool_use', name: 'echo', input: { text: 'asked' } }] })
  const parked = await step(session.id, [say('echo')])
  t.notOk(toolNames(s.model.requests[base]!).includes('fail'), 'a disabled tool is not offered')
  const use = of(parked, 'agent.mcp_tool_use')[0]
  t.match(use, { evaluated_permission: 'ask', evaluation: { type: 'always_ask' } })
  t.same(parked.at(-1).stop_reason, { type: 'requires_action', event_ids: [use.id] })
  t.notOk(
    mcp.calls.some((c) => c.args.text === 'asked'),
    'not called before it is confirmed',
  )

  s.model.enqueue({ steps: [{ type: 'text', text: 'echoed' }] })
  const allowed = await step(session.id, [{ type: 'user.tool_confirmation', tool_use_id: use.id, result: 'allow' }])
  t.match(of(allowed, 'agent.mcp_tool_result')[0], { mcp_tool_use_id: use.id, content: [{ type: 'text', text: 'asked' }] })
  t.same(allowed.at(-1).stop_reason, { type: 'end_turn' })

  s.model.enqueue({ steps: [{ type: 'tool_use', name: 'echo', input: { text: 'denied' } }] })
  const parkedAgain = await step(session.id, [say('again')])
  const second = of(parkedAgain, 'agent.mcp_tool_use')[0]
  s.model.enqueue({ steps: [{ type: 'text', text: 'fine' }] })
  const denied = await step(session.id, [{ type: 'user.tool_confirmation', tool_use_id: second.id, result: 'deny', deny_message: 'not that one' }])
  t.match(of(denied, 'agent.mcp_tool_result')[0], { mcp_tool_use_id: second.id, is_error: true, content: [{ type: 'text', text: 'not that one' }] })
  t.notOk(
    mcp.calls.some((c) => c.args.text === 'denied'),
    'a denied call never reaches the server',
  )
})

t.test('an interrupt cancels a running MCP call within a second, and the turn ends', async (t) => {
  const session = await newSession({ mcp_servers: [server('local', mcp.url)], tools: [toolset('local', { default_config: ALLOW })] })
  // One reply only: the interrupt ends the turn before any other request.
  s.model.enqueue({ steps: [{ type: 'tool_use', name: 'sleep', input: { ms: 60_000 } }] })
  const stream = reader(await s.client.beta.sessions.events.stream(session.id))
  const before = mcp.calls.length
  await s.client.beta.sessions.events.send(session.id, { events: [say('sleep')] } as any)
  await until('the sleep to run on the server', async () => mcp.calls.slice(before).some((c) => c.tool === 'sleep'), 20_000, 20)
  const sleep = mcp.calls.slice(before).find((c) => c.tool === 'sleep')!
  const sent = Date.now()
  await s.client.beta.sessions.events.send(session.id, { events: [{ type: 'user.interrupt' }] } as any)
  const rest = await stream.next(isIdle, 20_000)
  const idleAt = Date.now()
  await until('the server to see the cancellation', async () => sleep.cancelledAt !== undefined, 5_000, 10)
  t.ok(sleep.cancelledAt! - sent < 1000, `cancelled on the server ${sleep.cancelledAt! - sent} ms after the interrupt`)
  t.ok(idleAt - sent < 3000, `idle ${idleAt - sent} ms after the interrupt`)
  const result = of(rest, 'agent.mcp_tool_result')[0]
  t.match(result, { is_error: true, content: [{ type: 'text', text: /cancelled/ }] })
  t.same(rest.at(-1).stop_reason, { type: 'end_turn' })
  t.notOk(
    rest.some((e) => e.type === 'agent.message'),
    'no model request after the interrupt',
  )
})

t.test('a server that cannot be reached, or refuses, is reported and the turn goes on without its tools', async (t) => {
  const refusing = await startFakeMcpServer()
  t.teardown(() => refusing.close())
  refusing.status = 401
  const gone = await startFakeMcpServer()
  const goneUrl = gone.url
  await gone.close()
  const session = await newSession({
    mcp_servers: [server('gone', goneUrl), server('refusing', refusing.url), server('local', mcp.url)],
    tools: [toolset('gone'), toolset('refusing'), toolset('local', { default_config: ALLOW })],
  })
  const base = s.model.requests.length
  s.model.enqueue({ steps: [{ type: 'tool_use', name: 'echo', input: { text: 'still here' } }] }, { steps: [{ type: 'text', text: 'carried on' }] })
  const events = await step(session.id, [say('go')])
  const errors = of(events, 'session.error').map((e) => e.error)
  t.same(errors.map((e) => [e.type, e.mcp_server_name, e.retry_status.type]).sort(), [
    ['mcp_authentication_failed_error', 'refusing', 'retrying'],
    ['mcp_connection_failed_error', 'gone', 'retrying'],
  ])
  t.same(toolNames(s.model.requests[base]!).sort(), ['echo', 'fail', 'sleep'], 'only the reachable server’s tools')
  t.match(of(events, 'agent.mcp_tool_result')[0], { content: [{ type: 'text', text: 'still here' }] })
  t.same(events.at(-1).stop_reason, { type: 'end_turn' })
  t.equal(of(events, 'session.error').length, 2, 'each reported once in the turn, not at every request')

  // The next turn tries again: the credential is now accepted.
  refusing.status = undefined
  const next = s.model.requests.length
  s.model.enqueue({ steps: [{ type: 'text', text: 'all there' }] })
  const later = await step(session.id, [say('again')])
  t.same(
    of(later, 'session.error').map((e) => e.error.mcp_server_name),
    ['gone'],
    'only the server still gone is reported',
  )
  t.ok(toolNames(s.model.requests[next]!).includes('refusing__echo'), 'the refusing server’s tools are back')
})

t.test('a server’s list_changed is honoured: the next request offers its new tool', async (t) => {
  const changing = await startFakeMcpServer()
  t.teardown(() => changing.close())
  const session = await newSession({ mcp_servers: [server('changing', changing.url)], tools: [toolset('changing', { default_config: ALLOW })] })
  const base = s.model.requests.length
  s.model.enqueue({ steps: [{ type: 'text', text: 'first' }] })
  await step(session.id, [say('one')])
  t.notOk(toolNames(s.model.requests[base]!).includes('added'))
  t.equal(changing.listings, 1)
  changing.addTool('added')
  await until(
    'the list to be read again',
    async () => {
      s.model.enqueue({ steps: [{ type: 'text', text: 'again' }] })
      const at = s.model.requests.length
      await step(session.id, [say('again')])
      return toolNames(s.model.requests[at]!).includes('added')
    },
    20_000,
    100,
  )
  t.ok(changing.listings >= 2, 'listed again after the notification, not at every request')
})

t.test('a member thread’s MCP tool: asked on the session’s stream, confirmed, called through the session’s connection', async (t) => {
  const member = await s.client.beta.agents.create({
    name: 'mcp-member',
    model: 'claude-sonnet-4-5',
    system: 'MCP_MEMBER',
    description: 'Has the MCP tools.',
    mcp_servers: [server('local', mcp.url)],
    tools: [toolset('local')],
  } as any)
  const lead = await s.client.beta.agents.create({
    name: 'mcp-lead',
    model: 'claude-sonnet-4-5',
    system: 'MCP_LEAD',
    multiagent: { type: 'coordinator', agents: [member.id] },
  } as any)
  const env = await s.client.beta.environments.create({ name: 'mcp-threads' } as any)
  const session = await s.client.beta.sessions.create({ agent: lead.id, environment_id: env.id } as any)
  let leadTurns = 0
  let memberTurns = 0
  s.model.setHandler((req) => {
    if (req.body.system === 'MCP_MEMBER') {
      return ++memberTurns === 1
        ? { steps: [{ type: 'tool_use', name: 'echo', input: { text: 'from the member' } }] }
        : { steps: [{ type: 'text', text: 'member done' }] }
    }
    if (req.body.system === 'MCP_LEAD') {
      return ++leadTurns === 1
        ? { steps: [{ type: 'tool_use', name: 'send_to_agent', input: { agent: 'mcp-member', message: 'echo something' } }] }
        : { steps: [{ type: 'text', text: 'lead done' }] }
    }
    return undefined
  })
  t.teardown(() => s.model.setHandler(undefined))
  const parked = await step(session.id, [say('delegate')])
  const asked = of(parked, 'agent.mcp_tool_use')[0]
  t.match(asked, { mcp_server_name: 'local', name: 'echo', evaluated_permission: 'ask', session_thread_id: /^sthr_/ })
  t.same(parked.at(-1).stop_reason, { type: 'requires_action', event_ids: [asked.id] })
  const done = await step(
    session.id,
    [{ type: 'user.tool_confirmation', tool_use_id: asked.id, result: 'allow', session_thread_id: asked.session_thread_id }],
    (e) => isIdle(e),
  )
  t.same(done.at(-1).stop_reason, { type: 'end_turn' })
  t.ok(
    mcp.calls.some((c) => c.args.text === 'from the member'),
    'the member’s call reached the server',
  )
  const results = of(done, 'agent.tool_result').map((e) => e.content.map((c: any) => c.text).join(''))
  t.ok(results.includes('member done'), 'the send answered with the member’s reply')
})

t.test('an update of the agent’s MCP servers applies from the next turn: the removed server’s connection closes', async (t) => {
  const first = await startFakeMcpServer()
  const second = await startFakeMcpServer({ tools: [{ name: 'lookup', description: 'Looks up.', inputSchema: { type: 'object', properties: {} } }] })
  t.teardown(async () => {
    await first.close()
    await second.close()
  })
  const session = await newSession({ mcp_servers: [server('first', first.url)], tools: [toolset('first', { default_config: ALLOW })] })
  await step(session.id, [say('hello')])
  t.equal(first.open, 1, 'the first server connected')
  t.ok(toolNames(s.model.requests.at(-1)!).includes('echo'))

  await s.client.beta.sessions.update(session.id, {
    agent: { mcp_servers: [server('second', second.url)], tools: [toolset('second', { default_config: ALLOW })] },
  } as any)
  await until('the removed server’s connection to close', async () => first.open === 0, 10_000, 20)
  await step(session.id, [say('again')])
  const offered = toolNames(s.model.requests.at(-1)!)
  t.ok(offered.includes('lookup'), 'the new server’s tools offered')
  t.notOk(offered.includes('echo'), 'the removed server’s tools gone')
  t.equal(first.connections, 1, 'the removed server was not connected again')
  t.equal(second.open, 1)
})
