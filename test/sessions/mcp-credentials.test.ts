import t from 'tap'
import { startFakeModelServer } from '../fakes/model-server.js'
import { type FakeMcpServer, startFakeMcpServer } from '../fakes/mcp-server.js'
import '../helpers/keepalive.js'
import { startNats } from '../helpers/nats.js'
import { clientFor, logLines, raw, startTroupe } from '../helpers/troupe.js'
import { until } from '../helpers/wait.js'
import { deliveringEnv, startReceiver } from '../webhooks/_helpers.js'
import { collect, history, isIdle } from './_helpers.js'

/**
 * Vault credentials on sessions' MCP connections (issue 43 point 2), through the official client against `troupe
 * start`, a fake model and local MCP servers that need a bearer token: a static token sent; the first of the session's
 * vaults holding an active credential for the URL wins; no credential, no header; an expired OAuth token refreshed at
 * the token endpoint and stored; a token refused on an open connection refreshed once and the call made again; a
 * refresh that fails, and a static token refused, each a `session.error` while the turn goes on, the failed refresh
 * also the webhook `vault_credential.refresh_failed`. No secret in any event, log line or webhook.
 */

const receiver = await startReceiver()
const model = await startFakeModelServer()
const nats = await startNats()
const troupe = await startTroupe({ role: 'start', natsUrl: nats.url, env: deliveringEnv(receiver, model, { TROUPE_MCP_ALLOW_HOSTS: '127.0.0.1' }) })
const servers: FakeMcpServer[] = []
t.teardown(async () => {
  troupe.killNow()
  nats.stopNow()
  receiver.close()
  await model.close()
  for (const s of servers) await s.close()
})
const client = clientFor(troupe.url, { maxRetries: 3 })
const creds = client.beta.vaults.credentials
const H = { 'x-api-key': 'k', 'anthropic-version': '2023-06-01' }

/** Every secret the tests hand over: none may show up in an event, a log line or a webhook. */
const SECRETS: string[] = []
const secret = (s: string) => {
  SECRETS.push(s)
  return s
}

async function mcpServer(accept?: string[]): Promise<FakeMcpServer> {
  const s = await startFakeMcpServer()
  servers.push(s)
  if (accept) s.accept = new Set(accept)
  return s
}

const ALLOW = { permission_policy: { type: 'always_allow' } }
const env = await client.beta.environments.create({ name: 'mcp-credentials' })

/** A session of an agent whose one MCP server `name` is at `url`, with `vaults`. */
async function newSession(url: string, vaults: string[], name = 'guarded') {
  const agent = await client.beta.agents.create({
    name: `mcp-credentials-${name}`,
    model: 'claude-sonnet-4-5',
    mcp_servers: [{ type: 'url', name, url }],
    tools: [{ type: 'mcp_toolset', mcp_server_name: name, default_config: ALLOW }],
  } as any)
  return client.beta.sessions.create({ agent: agent.id, environment_id: env.id, vault_ids: vaults } as any)
}

/** One turn: the model calls `echo` once when `call`, then says it is done. The turn's events. */
async function turn(id: string, call = true): Promise<any[]> {
  if (call) model.enqueue({ steps: [{ type: 'tool_use', name: 'echo', input: { text: 'hello' } }] }, { steps: [{ type: 'text', text: 'done' }] })
  else model.enqueue({ steps: [{ type: 'text', text: 'done' }] })
  const stream = await client.beta.sessions.events.stream(id)
  await client.beta.sessions.events.send(id, { events: [{ type: 'user.message', content: [{ type: 'text', text: 'go' }] }] } as any)
  return collect(stream, isIdle, 30_000)
}

const of = (events: any[], type: string) => events.filter((e) => e.type === type)
const echoed = (events: any[]) => of(events, 'agent.mcp_tool_result').map((e) => ({ is_error: e.is_error, text: e.content?.[0]?.text }))
const vault = async (name: string) => (await client.beta.vaults.create({ display_name: name })).id
const bearer = (vaultId: string, url: string, token: string) =>
  creds.create(vaultId, { auth: { type: 'static_bearer', mcp_server_url: url, token: secret(token) } } as any)

t.test('a static bearer is sent; the first of the session’s vaults with an active credential wins; none: no header', async (t) => {
  const guarded = await mcpServer(['tok-two-b7c1', 'tok-three-e5d2'])
  const [v1, v2, v3, none] = [await vault('one'), await vault('two'), await vault('three'), await vault('none')]
  const archived = await bearer(v1, guarded.url, 'tok-one-a3f9')
  await creds.archive(archived.id, { vault_id: v1 })
  await bearer(v1, 'http://127.0.0.1:9/other', 'tok-other-c4e8')
  await bearer(v2, guarded.url, 'tok-two-b7c1')
  await bearer(v3, guarded.url, 'tok-three-e5d2')

  let from = guarded.authorizations.length
  const first = await newSession(guarded.url, [none, v1, v2, v3])
  t.same(echoed(await turn(first.id)), [{ is_error: false, text: 'hello' }], 'the call went through')
  t.same(new Set(guarded.authorizations.slice(from)), new Set(['Bearer tok-two-b7c1']), 'v1’s archived credential skipped, v2’s used')

  from = guarded.authorizations.length
  const second = await newSession(guarded.url, [v3, v2])
  t.same(echoed(await turn(second.id)), [{ is_error: false, text: 'hello' }])
  t.same(new Set(guarded.authorizations.slice(from)), new Set(['Bearer tok-three-e5d2']), 'the order is the session’s')

  const open = await mcpServer()
  const third = await newSession(open.url, [none, v2])
  t.same(echoed(await turn(third.id)), [{ is_error: false, text: 'hello' }])
  t.ok(open.authorizations.length > 0)
  t.same(new Set(open.authorizations), new Set([undefined]), 'no credential for the URL: no Authorization header')
})

t.test('a wrong static token: mcp_authentication_failed_error naming the server, once, and the turn goes on', async (t) => {
  const guarded = await mcpServer(['tok-right-9d0e'])
  const v = await vault('wrong')
  await bearer(v, guarded.url, 'tok-wrong-1f2a')
  const session = await newSession(guarded.url, [v])
  const events = await turn(session.id, false)
  const errors = of(events, 'session.error').map((e) => e.error)
  t.match(errors, [{ type: 'mcp_authentication_failed_error', mcp_server_name: 'guarded', retry_status: { type: 'retrying' } }])
  t.same(events.at(-1).stop_reason, { type: 'end_turn' })
  t.same(guarded.authorizations, ['Bearer tok-wrong-1f2a'], 'one request: a static token is not tried again within the connect')
})

/** An MCP server with a token endpoint at `/token` (rotating refresh tokens) and an OAuth credential for it. */
async function oauthSetup(o: { expiresInMs: number; auth?: 'none' | 'client_secret_basic' | 'client_secret_post'; accept?: boolean }) {
  const server = await mcpServer([])
  const tag = Math.random().toString(36).slice(2, 8)
  const access = secret(`at-0-${tag}`)
  const refresh = secret(`rt-0-${tag}`)
  const clientSecret = secret(`cs-${tag}`)
  if (o.accept) server.accept!.add(access)
  const auth = o.auth ?? 'client_secret_basic'
  server.oauth = { clientId: 'client-1', clientSecret, auth, refreshToken: refresh, expiresIn: 3600, requests: [], refreshes: 0 }
  const v = await vault(`oauth-${tag}`)
  const cred = await creds.create(v, {
    auth: {
      type: 'mcp_oauth',
      mcp_server_url: server.url,
      access_token: access,
      expires_at: new Date(Date.now() + o.expiresInMs).toISOString(),
      refresh: {
        client_id: 'client-1',
        refresh_token: refresh,
        token_endpoint: `${server.origin}/token`,
        token_endpoint_auth: auth === 'none' ? { type: 'none' } : { type: auth, client_secret: clientSecret },
        scope: 'tools:read',
        resource: server.url,
      },
    },
  } as any)
  return { server, vault: v, cred, access, refresh }
}

t.test('an expired OAuth token is refreshed and stored; a token refused later is refreshed once and the call made again', async (t) => {
  // Within the 30 s margin: expired as far as a session is concerned.
  const { server, vault: v, cred, refresh } = await oauthSetup({ expiresInMs: 5_000 })
  const session = await newSession(server.url, [v], 'oauth')
  t.same(echoed(await turn(session.id)), [{ is_error: false, text: 'hello' }])
  t.equal(server.oauth!.refreshes, 1, 'refreshed once')
  t.match(server.oauth!.requests[0], {
    form: { grant_type: 'refresh_token', refresh_token: refresh, scope: 'tools:read', resource: server.url },
    authorization: /^Basic /,
  })
  t.notOk('client_secret' in server.oauth!.requests[0]!.form, 'client_secret_basic: not in the body')
  const stored = await creds.retrieve(cred.id, { vault_id: v })
  const left = Date.parse((stored.auth as any).expires_at) - Date.now()
  t.ok(left > 3_500_000 && left <= 3_600_000, `expires_at from expires_in (${left} ms left)`)
  t.ok(
    server.authorizations.every((a) => a?.startsWith('Bearer access-1-')),
    'only the new token was sent',
  )

  // The next turn uses the stored token: no refresh.
  t.same(echoed(await turn(session.id)), [{ is_error: false, text: 'hello' }])
  t.equal(server.oauth!.refreshes, 1)

  // The server revokes it: the call on the open connection gets a 401, one refresh, one reconnect, the call made again.
  server.accept!.clear()
  const connections = server.connections
  const events = await turn(session.id)
  t.same(echoed(events), [{ is_error: false, text: 'hello' }], 'the call went through on the new token')
  t.same(of(events, 'session.error'), [], 'nothing reported')
  t.equal(server.oauth!.refreshes, 2, 'one more refresh')
  t.equal(server.connections, connections + 1, 'one reconnect')
  t.equal(server.calls.filter((c) => c.tool === 'echo').length, 3, 'each call ran once')
})

t.test('a refresh that fails: mcp_authentication_failed_error, the turn goes on, and vault_credential.refresh_failed is delivered', async (t) => {
  const hook = await raw(troupe.url, 'POST', '/v1/webhooks', { url: 'https://hooks.example.test/refresh', event_types: ['vault_credential.refresh_failed'] }, H)
  t.equal(hook.status, 200, hook.text)
  const { server, vault: v, cred } = await oauthSetup({ expiresInMs: 5_000, auth: 'client_secret_post' })
  server.oauth!.failWith = 400
  const session = await newSession(server.url, [v], 'failing')
  const events = await turn(session.id, false)
  const errors = of(events, 'session.error').map((e) => e.error)
  t.match(errors, [
    { type: 'mcp_authentication_failed_error', mcp_server_name: 'failing', message: /refresh of credential vcrd_\w+ failed.*400 \(invalid_grant\)/ },
  ])
  t.same(events.at(-1).stop_reason, { type: 'end_turn' })
  t.equal(server.oauth!.requests.length, 1, 'one refresh attempt')
  t.match(server.oauth!.requests[0]!.form, { client_id: 'client-1', client_secret: /^cs-/ }, 'client_secret_post: in the body')
  t.equal(server.authorizations.length, 0, 'the MCP server was not asked with a token known to be expired')
  await until('the webhook', async () => receiver.got.some((g) => g.path === '/refresh'), 30_000, 100)
  const got = receiver.got.filter((g) => g.path === '/refresh').map((g) => JSON.parse(g.body))
  t.match(got[0], { type: 'event', data: { type: 'vault_credential.refresh_failed', id: cred.id, vault_id: v } })
})

t.test('no secret in any event, log line or webhook', async (t) => {
  const list = await client.beta.sessions.list({ limit: 100 } as any)
  for (const s of list.data) {
    const text = JSON.stringify(await history(client, s.id))
    for (const x of SECRETS) t.notOk(text.includes(x), `session ${s.id}'s events hold no secret`)
  }
  const logs = JSON.stringify(logLines(troupe))
  const hooks = JSON.stringify(receiver.got)
  for (const x of SECRETS) {
    t.notOk(logs.includes(x), 'not in the logs')
    t.notOk(hooks.includes(x), 'not in a webhook')
  }
})
