import t from 'tap'
import '../helpers/keepalive.js'
import { connect } from '@nats-io/transport-node'
import { startFakeModelServer } from '../fakes/model-server.js'
import { startFakeMcpServer } from '../fakes/mcp-server.js'
import { startNats } from '../helpers/nats.js'
import { hostOf, placementOf, untilSplitEvenly } from '../helpers/placement.js'
import { clientFor, startTroupe, type TroupeProcess } from '../helpers/troupe.js'
import { keyringFile, newKey } from '../vaults/_helpers.js'
import { collect, isIdle, until } from './_helpers.js'

/**
 * An expired OAuth token refreshed once across two troupe hosts (issue 43 point 2): two sessions sharing a vault, one
 * on each host, connect to the same MCP server at the same moment; the token endpoint (which rotates refresh tokens, so
 * a second refresh with the same one would fail) sees exactly one refresh, and both sessions' calls succeed.
 */

t.setTimeout(180_000)
const model = await startFakeModelServer()
const mcp = await startFakeMcpServer()
const nats = await startNats()
const keyring = keyringFile([{ id: 'k1', key: newKey() }])
const env = {
  TROUPE_MODEL_BASE_URL: model.url,
  ANTHROPIC_API_KEY: 'k',
  TROUPE_MODEL_RETRY_BASE_MS: '20',
  TROUPE_VAULT_KEYRING_FILE: keyring,
  TROUPE_MCP_ALLOW_HOSTS: '127.0.0.1',
}
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

t.test('two hosts, one vault, an expired token: one refresh, both calls succeed', async (t) => {
  const a = await startTroupe({ natsUrl: nats.url, env })
  const b = await startTroupe({ natsUrl: nats.url, env })
  procs.push(a, b)
  await untilSplitEvenly(nc, 'session', [a, b])
  const client = clientFor(a.url, { maxRetries: 6 })

  mcp.accept = new Set()
  // The refresh is held in flight until both sessions are running (each turn starts by connecting), and a moment more.
  let release = () => {}
  const gate = new Promise<void>((r) => (release = r))
  mcp.oauth = { clientId: 'shared', auth: 'none', refreshToken: 'rt-shared-0', expiresIn: 3600, gate, requests: [], refreshes: 0 }
  const vault = await client.beta.vaults.create({ display_name: 'shared' })
  await client.beta.vaults.credentials.create(vault.id, {
    auth: {
      type: 'mcp_oauth',
      mcp_server_url: mcp.url,
      access_token: 'at-shared-0',
      expires_at: new Date(Date.now() + 5_000).toISOString(),
      refresh: { client_id: 'shared', refresh_token: 'rt-shared-0', token_endpoint: `${mcp.origin}/token`, token_endpoint_auth: { type: 'none' } },
    },
  } as any)
  const agent = await client.beta.agents.create({
    name: 'shared-oauth',
    model: 'claude-sonnet-4-5',
    mcp_servers: [{ type: 'url', name: 'shared', url: mcp.url }],
    tools: [{ type: 'mcp_toolset', mcp_server_name: 'shared', default_config: { permission_policy: { type: 'always_allow' } } }],
  } as any)
  const environment = await client.beta.environments.create({ name: 'shared-oauth' })

  // One session owned by each host.
  const byHost = new Map<string, string>()
  for (let i = 0; i < 40 && byHost.size < 2; i++) {
    const s = await client.beta.sessions.create({ agent: agent.id, environment_id: environment.id, vault_ids: [vault.id] } as any)
    const host = await ownerOf(s.id)
    if (host && !byHost.has(host)) byHost.set(host, s.id)
  }
  t.same(new Set(byHost.keys()), new Set([hostOf(a), hostOf(b)]), 'a session on each host')
  const sessions = [...byHost.values()]

  // A user message: call echo; its result: done.
  model.setHandler((req) => {
    const last = req.body.messages?.at(-1)
    const isResult = Array.isArray(last?.content) && last.content.some((c: any) => c.type === 'tool_result')
    return isResult ? { steps: [{ type: 'text', text: 'done' }] } : { steps: [{ type: 'tool_use', name: 'echo', input: { text: 'both' } }] }
  })
  t.teardown(() => model.setHandler(undefined))
  const streams = await Promise.all(sessions.map((id) => client.beta.sessions.events.stream(id)))
  const running = new Set<number>()
  const done = streams.map((s, i) =>
    collect(
      s,
      (e) => {
        if (e.type === 'session.status_running') running.add(i)
        return isIdle(e)
      },
      60_000,
    ),
  )
  await Promise.all(
    sessions.map((id) => client.beta.sessions.events.send(id, { events: [{ type: 'user.message', content: [{ type: 'text', text: 'go' }] }] } as any)),
  )
  await until('both sessions to be running', async () => running.size === 2, 30_000, 20)
  await until('the refresh to be asked', async () => mcp.oauth!.requests.length > 0, 30_000, 20)
  await new Promise((r) => setTimeout(r, 500))
  t.equal(mcp.oauth.requests.length, 1, 'one refresh in flight while both sessions connect')
  release()
  const events = await Promise.all(done)
  for (const [i, evs] of events.entries()) {
    t.match(
      evs.filter((e) => e.type === 'agent.mcp_tool_result'),
      [{ is_error: false, content: [{ type: 'text', text: 'both' }] }],
      `session ${i + 1}'s call succeeded`,
    )
    t.same(
      evs.filter((e) => e.type === 'session.error'),
      [],
    )
  }
  t.equal(mcp.oauth.requests.length, 1, 'the token endpoint was asked once')
  t.equal(mcp.oauth.refreshes, 1, 'one refresh')
  t.equal(mcp.calls.filter((c) => c.tool === 'echo').length, 2)
  t.ok(
    mcp.authorizations.every((h) => h?.startsWith('Bearer access-1-')),
    'both hosts sent the one refreshed token',
  )
})
