// `mcp`: an MCP tool round trip through a session (issue 43) against a direct SDK call to the same local MCP server in
// the same run. The fake model answers a user message `mcp: <text>` with one `echo` tool use of a server the agent
// names (always_allow), and its result with "done". The session's round trip is timed on an open SSE stream, from the
// `agent.mcp_tool_use` to the `agent.mcp_tool_result` (the intent stored, the call, the result stored and streamed);
// the direct one is `Client.callTool` over the SDK's own connection. Target: the session adds under 3 ms at p50.
import { performance } from 'node:perf_hooks'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { DEFAULT_MCP_TIMINGS, McpPool, NO_AUTH } from '../../actors/mcp/index.js'
import { egressFetch } from '../../actors/mcp/egress.js'
import { parseAddressExceptions } from '../../actors/kit/index.js'
import { startFakeMcpServer } from '../fakes/mcp-server.js'
import { bed, ms, request, summary, userMessage } from './bed.js'
import { openSse, streamAgent } from './sse-client.js'

const CALLS = Number(process.env.BENCH_MCP_CALLS ?? 100)

export async function runMcpBench(): Promise<void> {
  console.log(`\nmcp: an MCP tool round trip through a session against a direct SDK call, ${CALLS} calls each`)
  const server = await startFakeMcpServer()
  const b = await bed({ TROUPE_MCP_ALLOW_HOSTS: '127.0.0.1' }, { BENCH_MODEL_SCRIPT: 'mcp' })
  try {
    const direct = new Client({ name: 'bench', version: '1' })
    await direct.connect(new StreamableHTTPClientTransport(new URL(server.url)))
    const directTimes: number[] = []
    for (let i = 0; i < CALLS + 10; i++) {
      const start = performance.now()
      await direct.callTool({ name: 'echo', arguments: { text: `direct ${i}` } })
      if (i >= 10) directTimes.push(performance.now() - start)
    }
    await direct.close()
    // Troupe's own MCP client (its checked fetch, its byte limit) outside a session: what of the difference is the client.
    const pool = new McpPool(NO_AUTH, DEFAULT_MCP_TIMINGS, egressFetch({ except: parseAddressExceptions('127.0.0.1', 'bench') }))
    const clientTimes: number[] = []
    for (let i = 0; i < CALLS + 10; i++) {
      const start = performance.now()
      await pool.get({ name: 'local', url: server.url }).call('echo', { text: `client ${i}` }, new AbortController().signal)
      if (i >= 10) clientTimes.push(performance.now() - start)
    }
    await pool.close()

    const post = (p: string, body: unknown) => request(b.agent, b.troupe.url, 'POST', p, body)
    const env = await post('/v1/environments', { name: 'bench' })
    const agent = await post('/v1/agents', {
      name: 'mcp-bench',
      model: 'claude-sonnet-4-6',
      mcp_servers: [{ type: 'url', name: 'local', url: server.url }],
      tools: [{ type: 'mcp_toolset', mcp_server_name: 'local', default_config: { permission_policy: { type: 'always_allow' } } }],
    })
    const session = await post('/v1/sessions', { agent: agent.id, environment_id: env.id })
    const streams = streamAgent()
    let use = 0
    let onResult: (dt: number) => void = () => undefined
    let onIdle: () => void = () => undefined
    const sse = openSse(`${b.troupe.url}/v1/sessions/${session.id}/events/stream`, streams, (m) => {
      if (m.event === 'agent.mcp_tool_use') use = m.at
      if (m.event === 'agent.mcp_tool_result') onResult(m.at - use)
      if (m.event === 'session.status_idle') onIdle()
    })
    await sse.opened
    const sessionTimes: number[] = []
    for (let i = 0; i < CALLS + 10; i++) {
      const result = new Promise<number>((resolve) => (onResult = resolve))
      const idle = new Promise<void>((resolve) => (onIdle = resolve))
      await post(`/v1/sessions/${session.id}/events`, userMessage(`mcp: session ${i}`))
      const dt = await result
      await idle
      if (i >= 10) sessionTimes.push(dt)
    }
    sse.close()
    streams.destroy()
    const d = summary(directTimes)
    const s = summary(sessionTimes)
    const c = summary(clientTimes)
    console.log(`  direct SDK call        p50 ${ms(d.p50).padStart(9)}, p99 ${ms(d.p99).padStart(9)}`)
    console.log(`  Troupe's MCP client    p50 ${ms(c.p50).padStart(9)}, p99 ${ms(c.p99).padStart(9)} (its fetch and byte limit, no session)`)
    console.log(`  through the session    p50 ${ms(s.p50).padStart(9)}, p99 ${ms(s.p99).padStart(9)} (use → result on the stream)`)
    console.log(`  the session adds       p50 ${ms(s.p50 - d.p50).padStart(9)}, p99 ${ms(s.p99 - d.p99).padStart(9)} (target: under 3 ms at p50)`)
  } finally {
    b.stop()
    await server.close()
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await runMcpBench()
