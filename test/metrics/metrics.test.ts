import t from 'tap'
import { sampleSum } from '../helpers/prom-text.js'
import { raw } from '../helpers/troupe.js'
import { until } from '../helpers/wait.js'
import { startFakeMcpServer } from '../fakes/mcp-server.js'
import { agentAndEnv, collect, isIdle, newSession, sessionStack, step } from '../sessions/_helpers.js'
import { highCardinality, scrape } from './_helpers.js'

/**
 * `GET /metrics` of a `troupe serve` against the fake model: parsed strictly, and its counters move as requests, turns
 * and tools run, with no label that names an object or a request.
 */

// Tools on the host backend: what is counted does not depend on the machine's sandbox. The MCP server is on loopback.
const s = await sessionStack({ TROUPE_SANDBOX: 'local', TROUPE_MCP_ALLOW_HOSTS: '127.0.0.1' })
const mcp = await startFakeMcpServer()
t.teardown(() => mcp.close())

const MODEL = 'claude-sonnet-4-5'
const say = (text: string) => ({ type: 'user.message', content: [{ type: 'text', text }] })

t.test('the exposition is served, parsed strictly, and lists each layer', async (t) => {
  const f = await scrape(s.url)
  for (const name of [
    'troupe_http_requests_total',
    'troupe_http_request_duration_seconds',
    'troupe_sse_streams_open',
    'troupe_actor_activations_total',
    'troupe_actor_passivations_total',
    'troupe_actors_live',
    'troupe_actor_mailbox_depth',
    'troupe_partition_moves_total',
    'troupe_turns_total',
    'troupe_model_requests_total',
    'troupe_model_request_duration_seconds',
    'troupe_model_tokens_total',
    'troupe_model_list_cost_usd_total',
    'troupe_tool_runs_total',
    'troupe_tool_run_duration_seconds',
    'troupe_webhook_deliveries_total',
    'troupe_webhook_delivery_lag_seconds',
    'troupe_schedule_fire_delay_seconds',
    'troupe_work_queue_items',
    'troupe_sandboxes_open',
    'troupe_nats_connected',
    'troupe_nats_reconnects_total',
    // prom-client's collectDefaultMetrics
    'process_cpu_user_seconds_total',
    'nodejs_eventloop_lag_seconds',
  ]) {
    t.ok(f.has(name), name)
  }
  t.equal(f.get('troupe_http_request_duration_seconds')?.type, 'histogram')
  t.equal(sampleSum(f, 'troupe_nats_connected'), 1)
  // This host took every partition of every kind at start.
  t.ok(sampleSum(f, 'troupe_partition_moves_total', { kind: 'session', direction: 'gained' }) > 0)
  t.equal(sampleSum(f, 'troupe_sse_streams_open'), 0)

  const head = await fetch(`${s.url}/metrics`, { method: 'HEAD' })
  t.equal(head.status, 200)
  t.equal(await head.text(), '')
  const post = await raw(s.url, 'POST', '/metrics', {})
  t.equal(post.status, 405)
  t.equal(post.headers.get('allow'), 'GET, HEAD')
  const listed = await raw(s.url, 'GET', '/openapi.yaml')
  t.match(listed.text, /"\/metrics":/)
})

t.test('HTTP requests are counted by route pattern and status, never by path', async (t) => {
  const { agent } = await agentAndEnv(s.client)
  const before = await scrape(s.url)
  for (let i = 0; i < 3; i++) await s.client.beta.agents.retrieve(agent.id)
  await raw(s.url, 'GET', '/v1/agents/agent_01HZZZZZZZZZZZZZZZZZZZZZZZ')
  await raw(s.url, 'GET', `/v1/nothing/${agent.id}`)
  // A method both HTTP parsers take (node's refuses tokens it does not know) but the label set does not name.
  await raw(s.url, 'PROPFIND', '/v1/agents')
  const after = await scrape(s.url)
  const moved = (labels: Record<string, string>, name = 'troupe_http_requests_total') => sampleSum(after, name, labels) - sampleSum(before, name, labels)
  const route = '/v1/agents/{agent_id}'
  t.equal(moved({ method: 'GET', route, status: '200' }), 3)
  t.equal(moved({ method: 'GET', route, status: '404' }), 1)
  t.equal(moved({ method: 'GET', route: 'unmatched', status: '404' }), 1)
  t.equal(moved({ method: 'other', route: 'unmatched' }), 1, 'an unknown method is other')
  t.equal(moved({ method: 'GET', route, status_class: '2xx' }, 'troupe_http_request_duration_seconds_count'), 3)
  t.equal(moved({ method: 'GET', route, status_class: '4xx' }, 'troupe_http_request_duration_seconds_count'), 1)
  t.ok(moved({ method: 'GET', route, status_class: '2xx' }, 'troupe_http_request_duration_seconds_sum') > 0)
  // The scrape before this one was counted too, under its own pattern.
  t.ok(sampleSum(after, 'troupe_http_requests_total', { route: '/metrics', status: '200' }) >= 1)
  t.same(highCardinality(after), [])
})

t.test('a turn with a tool: turns, model requests, tokens, list cost, tool runs and actors move', async (t) => {
  const { agent, env } = await agentAndEnv(s.client, { tools: [{ type: 'agent_toolset_20260401' }] })
  const session = await s.client.beta.sessions.create({ agent: agent.id, environment_id: env.id } as any)
  const before = await scrape(s.url)
  s.model.enqueue(
    { steps: [{ type: 'tool_use', name: 'bash', input: { command: 'echo hi' } }], usage: { input_tokens: 100, output_tokens: 7 } },
    { steps: [{ type: 'text', text: 'done' }], usage: { input_tokens: 120, output_tokens: 3, cache_read_input_tokens: 50 } },
  )
  const stream = await s.client.beta.sessions.events.stream(session.id)
  const during = await scrape(s.url)
  t.ok(sampleSum(during, 'troupe_sse_streams_open') >= 1, 'the open stream is counted')
  await s.client.beta.sessions.events.send(session.id, { events: [say('run it')] } as any)
  const events = await collect(stream, isIdle, 20_000)
  t.equal(events.at(-1)?.type, 'session.status_idle')
  const after = await scrape(s.url)
  const moved = (name: string, labels: Record<string, string> = {}) => sampleSum(after, name, labels) - sampleSum(before, name, labels)

  t.equal(moved('troupe_turns_total', { stop_reason: 'end_turn' }), 1)
  t.equal(moved('troupe_model_requests_total', { model: MODEL, outcome: 'ok' }), 2)
  t.equal(moved('troupe_model_request_duration_seconds_count', { model: MODEL }), 2)
  t.equal(moved('troupe_model_tokens_total', { model: MODEL, type: 'input' }), 220)
  t.equal(moved('troupe_model_tokens_total', { model: MODEL, type: 'output' }), 10)
  t.equal(moved('troupe_model_tokens_total', { model: MODEL, type: 'cache_read' }), 50)
  // Sonnet 4.5's list prices: 3 USD per million input tokens, 15 per million output, 0.30 per million cache reads.
  t.ok(Math.abs(moved('troupe_model_list_cost_usd_total', { model: MODEL }) - (220 * 3 + 10 * 15 + 50 * 0.3) / 1e6) < 1e-12)
  t.equal(moved('troupe_tool_runs_total', { tool: 'bash', outcome: 'ok' }), 1)
  t.equal(moved('troupe_tool_run_duration_seconds_count', { tool: 'bash' }), 1)
  t.ok(moved('troupe_actor_activations_total', { kind: 'session' }) >= 0)
  t.ok(sampleSum(after, 'troupe_actors_live', { kind: 'session' }) >= 1, 'the session is in memory')
  t.ok(sampleSum(after, 'troupe_sandboxes_open', { backend: 'local' }) >= 1, 'its sandbox is open')
  // The idle record is written after the idle event (its own queue): the writes queued drain to none.
  await until('the mailboxes drained', async () => sampleSum(await scrape(s.url), 'troupe_actor_mailbox_depth', { kind: 'session' }) === 0, 5000)
  t.ok(moved('troupe_http_requests_total', { method: 'POST', route: '/v1/sessions/{session_id}/events', status: '200' }) === 1)
  t.same(highCardinality(after), [])
})

t.test('a failed model request is counted as an error, and the turn by its stop reason', async (t) => {
  const { agent, env } = await agentAndEnv(s.client)
  const session = await s.client.beta.sessions.create({ agent: agent.id, environment_id: env.id } as any)
  const before = await scrape(s.url)
  const fatal = { error: { status: 400, type: 'invalid_request_error' } }
  s.model.enqueue(fatal)
  const stream = await s.client.beta.sessions.events.stream(session.id)
  await s.client.beta.sessions.events.send(session.id, { events: [say('fail')] } as any)
  const events = await collect(stream, isIdle, 20_000)
  const idle = events.at(-1)
  t.equal(idle?.type, 'session.status_idle')
  const after = await scrape(s.url)
  const moved = (name: string, labels: Record<string, string> = {}) => sampleSum(after, name, labels) - sampleSum(before, name, labels)
  t.equal(moved('troupe_model_requests_total', { model: MODEL, outcome: 'error' }), 1)
  t.equal(moved('troupe_turns_total', { stop_reason: idle.stop_reason.type }), 1)
  t.equal(moved('troupe_model_request_duration_seconds_count'), 0, 'only answered requests are timed')
})

t.test('MCP tool calls are counted as mcp, by outcome', async (t) => {
  const session = await newSession(s.client, {
    mcp_servers: [{ type: 'url', name: 'local', url: mcp.url }],
    tools: [{ type: 'mcp_toolset', mcp_server_name: 'local', default_config: { permission_policy: { type: 'always_allow' } } }],
  })
  const before = await scrape(s.url)
  s.model.enqueue(
    { steps: [{ type: 'tool_use', name: 'echo', input: { text: 'hi' } }] },
    { steps: [{ type: 'tool_use', name: 'fail', input: {} }] },
    { steps: [{ type: 'text', text: 'done' }] },
  )
  const events = await step(s.client, session.id, [say('call them')])
  t.equal(events.at(-1)?.type, 'session.status_idle')
  const after = await scrape(s.url)
  const moved = (name: string, labels: Record<string, string>) => sampleSum(after, name, labels) - sampleSum(before, name, labels)
  t.equal(moved('troupe_tool_runs_total', { tool: 'mcp', outcome: 'ok' }), 1)
  t.equal(moved('troupe_tool_runs_total', { tool: 'mcp', outcome: 'error' }), 1)
  t.equal(moved('troupe_tool_run_duration_seconds_count', { tool: 'mcp' }), 2)
  t.same(highCardinality(after), [])
})

t.test('work queue items: queued when a self-hosted session is created, pending once a poll hands one out', async (t) => {
  const { agent, env } = await agentAndEnv(s.client, { tools: [{ type: 'agent_toolset_20260401' }] }, { config: { type: 'self_hosted' } })
  const before = await scrape(s.url)
  const items = (f: Awaited<ReturnType<typeof scrape>>, state: string) => sampleSum(f, 'troupe_work_queue_items', { state })
  await s.client.beta.sessions.create({ agent: agent.id, environment_id: env.id } as any)
  const queued = await scrape(s.url)
  t.equal(items(queued, 'queued') - items(before, 'queued'), 1)
  const item = await s.client.beta.environments.work.poll(env.id, { block_ms: 999 })
  t.ok(item, 'the item handed out')
  const handed = await scrape(s.url)
  t.equal(items(handed, 'queued') - items(before, 'queued'), 0)
  t.equal(items(handed, 'pending') - items(before, 'pending'), 1)
})
