import t from 'tap'
import { startFakeMcpServer } from '../fakes/mcp-server.js'
import { agentAndEnv, collect, isIdle, sessionStack, until } from './_helpers.js'

/**
 * A session's MCP connections live as long as it is in memory (issue 43 point 1): an idle session that leaves memory
 * ends its MCP session on the server, and its next turn, on a rebuilt actor, connects again.
 */

const s = await sessionStack({ TROUPE_SESSION_IDLE_MS: '500', TROUPE_MCP_ALLOW_HOSTS: '127.0.0.1' })
const mcp = await startFakeMcpServer()
t.teardown(() => mcp.close())

t.test('passivation closes the connection; the next turn opens a new one', async (t) => {
  const { agent, env } = await agentAndEnv(s.client, {
    mcp_servers: [{ type: 'url', name: 'local', url: mcp.url }],
    tools: [{ type: 'mcp_toolset', mcp_server_name: 'local', default_config: { permission_policy: { type: 'always_allow' } } }],
  })
  const session = await s.client.beta.sessions.create({ agent: agent.id, environment_id: env.id } as any)
  const turn = async (text: string) => {
    s.model.enqueue({ steps: [{ type: 'tool_use', name: 'echo', input: { text } }] }, { steps: [{ type: 'text', text: 'ok' }] })
    const stream = await s.client.beta.sessions.events.stream(session.id)
    await s.client.beta.sessions.events.send(session.id, { events: [{ type: 'user.message', content: [{ type: 'text', text }] }] } as any)
    return collect(stream, isIdle, 20_000)
  }
  const first = await turn('one')
  t.match(
    first.find((e) => e.type === 'agent.mcp_tool_result'),
    { content: [{ type: 'text', text: 'one' }] },
  )
  t.equal(mcp.connections, 1, 'one connection, opened by the first turn')
  await until('the session to leave memory and end its MCP session', async () => mcp.open === 0, 20_000, 50)
  const second = await turn('two')
  t.match(
    second.find((e) => e.type === 'agent.mcp_tool_result'),
    { content: [{ type: 'text', text: 'two' }] },
  )
  t.equal(mcp.connections, 2, 'the rebuilt actor connected again')
})
