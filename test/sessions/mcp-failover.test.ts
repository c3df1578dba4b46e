import t from 'tap'
import '../helpers/keepalive.js'
import { connect } from '@nats-io/transport-node'
import { startFakeModelServer } from '../fakes/model-server.js'
import { startFakeMcpServer } from '../fakes/mcp-server.js'
import { startNats } from '../helpers/nats.js'
import { hostOf, placementOf, untilSplitEvenly } from '../helpers/placement.js'
import { clientFor, startTroupe, type TroupeProcess } from '../helpers/troupe.js'
import { until } from '../helpers/wait.js'
import { history, reader } from './_helpers.js'

/**
 * The write-ahead rule for MCP calls (issue 43 point 1): the host running a session is SIGKILLed while an MCP tool
 * runs; the host that takes the session over reports the call as interrupted and never calls it again, and its own
 * connection to the server serves the session's next call.
 */

t.setTimeout(240_000)
const TAKEOVER_MS = 45_000

const model = await startFakeModelServer()
const mcp = await startFakeMcpServer()
const nats = await startNats()
const env = { TROUPE_MODEL_BASE_URL: model.url, ANTHROPIC_API_KEY: 'k', TROUPE_MODEL_RETRY_BASE_MS: '20', TROUPE_MCP_ALLOW_HOSTS: '127.0.0.1' }
const procs: TroupeProcess[] = []
t.teardown(async () => {
  for (const p of procs) p.killNow()
  nats.stopNow()
  await model.close()
  await mcp.close()
})
const nc = await connect({ servers: nats.url })
t.teardown(() => void nc.close())
const ownerOf = await placementOf(nc, 'session')

t.test('the owner dies during an MCP call: the call is reported interrupted, never run twice, and the next host reconnects', async (t) => {
  const a = await startTroupe({ natsUrl: nats.url, env })
  const b = await startTroupe({ natsUrl: nats.url, env })
  procs.push(a, b)
  await untilSplitEvenly(nc, 'session', [a, b])
  const setupClient = clientFor(a.url, { maxRetries: 6 })
  const agent = await setupClient.beta.agents.create({
    name: 'mcp-failover',
    model: 'claude-sonnet-4-5',
    mcp_servers: [{ type: 'url', name: 'local', url: mcp.url }],
    tools: [{ type: 'mcp_toolset', mcp_server_name: 'local', default_config: { permission_policy: { type: 'always_allow' } } }],
  } as any)
  const environment = await setupClient.beta.environments.create({ name: 'mcp-failover' })
  const session = await setupClient.beta.sessions.create({ agent: agent.id, environment_id: environment.id } as any)
  const owner = (await ownerOf(session.id)) === hostOf(a) ? a : b
  const survivor = owner === a ? b : a
  const client = clientFor(survivor.url, { maxRetries: 6 })

  model.enqueue({ steps: [{ type: 'tool_use', name: 'sleep', input: { ms: 8000 } }] }, { steps: [{ type: 'text', text: 'noted' }] })
  const stream = reader(await client.beta.sessions.events.stream(session.id))
  await client.beta.sessions.events.send(session.id, { events: [{ type: 'user.message', content: [{ type: 'text', text: 'sleep' }] }] } as any)
  await until('the MCP call to run', async () => mcp.calls.some((c) => c.tool === 'sleep'), 30_000, 20)
  const connections = mcp.connections
  await owner.kill()
  const seen = await stream.next((e) => e.type === 'session.status_idle', TAKEOVER_MS)
  t.ok(
    seen.some((e) => e.type === 'session.status_rescheduled'),
    'rescheduled on the new host',
  )
  const all = await history(client, session.id)
  const use = all.find((e) => e.type === 'agent.mcp_tool_use')
  const results = all.filter((e) => e.type === 'agent.mcp_tool_result')
  t.equal(results.length, 1, 'one result for the MCP call')
  t.match(results[0], { mcp_tool_use_id: use.id, is_error: true, content: [{ type: 'text', text: /not run again/ }] })
  t.same(
    all.filter((e) => e.type === 'agent.message').map((m) => m.content[0].text),
    ['noted'],
  )
  t.equal(mcp.calls.filter((c) => c.tool === 'sleep').length, 1, 'the call ran once, on the dead host')

  // The session's next call goes through the new host's own connection.
  model.enqueue({ steps: [{ type: 'tool_use', name: 'echo', input: { text: 'from the new host' } }] }, { steps: [{ type: 'text', text: 'ok' }] })
  await client.beta.sessions.events.send(session.id, { events: [{ type: 'user.message', content: [{ type: 'text', text: 'echo' }] }] } as any)
  const next = await stream.next((e) => e.type === 'session.status_idle', 30_000)
  t.match(
    next.find((e) => e.type === 'agent.mcp_tool_result'),
    { is_error: false, content: [{ type: 'text', text: 'from the new host' }] },
  )
  t.ok(mcp.connections > connections, 'the new host opened its own connection')
  t.equal(mcp.calls.filter((c) => c.tool === 'sleep').length, 1, 'still once')
})
