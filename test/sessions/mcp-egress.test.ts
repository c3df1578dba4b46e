import t from 'tap'
import { startFakeMcpServer } from '../fakes/mcp-server.js'
import { isolatedOrSkip } from '../helpers/sandbox-backend.js'
import { agentAndEnv, collect, failure, isError, isIdle, sessionStack } from './_helpers.js'

/**
 * Where sessions' MCP connections may go (issue 43 point 4). A limited environment reaches MCP servers only with
 * `allow_mcp_servers`: a session create, an update of its agent's tools, a deployment's create and update are refused
 * without it, and a run whose environment was limited since fails with `mcp_egress_blocked_error`. And the server's
 * own connections reach only public addresses: a loopback MCP server (this test's, which the operator has not listed in
 * TROUPE_MCP_ALLOW_HOSTS) is reported as unreachable, saying why, and the turn goes on without it.
 */

const s = await sessionStack()
const mcp = await startFakeMcpServer()
t.teardown(() => mcp.close())

const ALLOW = { permission_policy: { type: 'always_allow' } }
const MCP_AGENT = {
  mcp_servers: [{ type: 'url', name: 'docs', url: 'https://mcp.example.test/mcp' }],
  tools: [{ type: 'agent_toolset_20260401' }, { type: 'mcp_toolset', mcp_server_name: 'docs', default_config: ALLOW }],
}
const limited = (allow_mcp_servers: boolean) => ({
  config: { type: 'cloud', networking: { type: 'limited', allowed_hosts: ['example.com'], allow_mcp_servers } },
})
const BLOCKED = /^agent\.tools\[1\]: MCP server docs cannot be reached: environment env_\w+ has limited networking without allow_mcp_servers/

t.test('a limited environment without allow_mcp_servers refuses agents with MCP toolsets', async (t) => {
  const { agent, env } = await agentAndEnv(s.client, MCP_AGENT, limited(false))
  isError(
    t,
    await failure(s.client.beta.sessions.create({ agent: agent.id, environment_id: env.id } as any)),
    400,
    'invalid_request_error',
    BLOCKED,
    'mcp_egress_blocked',
  )
  // Without MCP tools the environment serves.
  const plain = await s.client.beta.agents.create({ name: 'plain', model: 'claude-sonnet-4-5', tools: [{ type: 'agent_toolset_20260401' }] } as any)
  const session = await s.client.beta.sessions.create({ agent: plain.id, environment_id: env.id } as any)
  // Nor may an update add them.
  isError(
    t,
    await failure(s.client.beta.sessions.update(session.id, { agent: { mcp_servers: MCP_AGENT.mcp_servers, tools: MCP_AGENT.tools } } as any)),
    400,
    'invalid_request_error',
    BLOCKED,
    'mcp_egress_blocked',
  )
  t.same((await s.client.beta.sessions.retrieve(session.id)).agent.mcp_servers, [], 'nothing changed')
  // An override that drops the toolset is a session that may run there.
  const overridden = await s.client.beta.sessions.create({
    agent: { type: 'agent_with_overrides', id: agent.id, tools: [{ type: 'agent_toolset_20260401' }], mcp_servers: [] },
    environment_id: env.id,
  } as any)
  t.same(overridden.agent.tools.length, 1)
})

t.test('with allow_mcp_servers the same agent runs', isolatedOrSkip(), async (t) => {
  const { agent, env } = await agentAndEnv(s.client, MCP_AGENT, limited(true))
  const session = await s.client.beta.sessions.create({ agent: agent.id, environment_id: env.id } as any)
  t.equal(session.agent.mcp_servers.length, 1)
})

t.test('deployments: refused at create and update; a run after the environment was limited fails and says why', async (t) => {
  const { agent, env } = await agentAndEnv(s.client, MCP_AGENT, limited(false))
  const hello = [{ type: 'user.message', content: [{ type: 'text', text: 'hi' }] }]
  const base = { name: 'd', initial_events: hello }
  isError(
    t,
    await failure(s.client.beta.deployments.create({ ...base, agent: agent.id, environment_id: env.id } as any)),
    400,
    'invalid_request_error',
    BLOCKED,
    'mcp_egress_blocked',
  )
  const open = await s.client.beta.environments.create({ name: 'open' } as any)
  const plain = await s.client.beta.agents.create({ name: 'plain', model: 'claude-sonnet-4-5' } as any)
  const d = await s.client.beta.deployments.create({ ...base, agent: agent.id, environment_id: open.id } as any)
  isError(t, await failure(s.client.beta.deployments.update(d.id, { environment_id: env.id } as any)), 400, 'invalid_request_error', BLOCKED)
  const other = await s.client.beta.deployments.create({ ...base, agent: plain.id, environment_id: env.id } as any)
  isError(t, await failure(s.client.beta.deployments.update(other.id, { agent: agent.id } as any)), 400, 'invalid_request_error', BLOCKED)

  // The environment limited after the deployment was made: its next run cannot create a session.
  await s.client.beta.environments.update(open.id, limited(false) as any)
  const run = await s.client.beta.deployments.run(d.id)
  t.equal(run.session_id, null)
  t.equal(run.error?.type, 'mcp_egress_blocked_error')
  t.match(run.error?.message, /MCP server docs cannot be reached/)
})

t.test("the server's MCP connections reach only public addresses unless the operator lists them", async (t) => {
  const { agent, env } = await agentAndEnv(s.client, {
    mcp_servers: [{ type: 'url', name: 'local', url: mcp.url }],
    tools: [{ type: 'mcp_toolset', mcp_server_name: 'local', default_config: ALLOW }],
  })
  const session = await s.client.beta.sessions.create({ agent: agent.id, environment_id: env.id } as any)
  const stream = await s.client.beta.sessions.events.stream(session.id)
  await s.client.beta.sessions.events.send(session.id, { events: [{ type: 'user.message', content: [{ type: 'text', text: 'hello' }] }] } as any)
  const events = await collect(stream, isIdle, 20_000)
  const error = events.find((e) => e.type === 'session.error')
  t.equal(error?.error?.type, 'mcp_connection_failed_error')
  t.equal(error?.error?.mcp_server_name, 'local')
  t.match(error?.error?.message, /127\.0\.0\.1 .*\(loopback\), not a public address .*TROUPE_MCP_ALLOW_HOSTS/)
  t.ok(
    events.some((e) => e.type === 'agent.message'),
    'the turn went on without the server',
  )
  t.equal(mcp.connections, 0, 'nothing reached the server')
  const offered = s.model.requests.at(-1)?.body.tools ?? []
  t.notOk(
    offered.some((x: any) => x.name === 'echo'),
    'its tools were not offered',
  )
})
