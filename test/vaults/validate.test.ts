import t from 'tap'
import { type FakeMcpServer, startFakeMcpServer } from '../fakes/mcp-server.js'
import { stack } from '../helpers/stack.js'
import { failure, isError, until } from '../sessions/_helpers.js'
import { keyringFile, newKey } from './_helpers.js'

/**
 * `mcp_oauth_validate` probes for real (WIRE §15; the official client's `CredentialValidation`): the credential's MCP
 * server asked with its access token (`initialize`, `tools/list`), a refused token refreshed once at the token endpoint
 * and probed again, and the verdict `valid`, `invalid` or `unknown` with the failed step and the refresh's outcome.
 */

// The fake servers are on the loopback: let through as an operator would (the token endpoint and the probe follow
// the MCP connections' address rules).
const s = await stack({ env: { TROUPE_VAULT_KEYRING_FILE: keyringFile([{ id: 'k1', key: newKey() }]), TROUPE_MCP_ALLOW_HOSTS: '127.0.0.1' } })
const creds = s.client.beta.vaults.credentials
const servers: FakeMcpServer[] = []
t.teardown(async () => {
  for (const x of servers) await x.close()
})
const vaultId = (await s.client.beta.vaults.create({ display_name: 'validate' })).id

let n = 0
/** An MCP server taking `accept` (none: nothing), with a token endpoint, and an OAuth credential for it. */
async function setup(o: { accept?: boolean; refresh?: boolean; tokenEndpoint?: string; url?: string; expiresInMs?: number } = {}) {
  const server = await startFakeMcpServer()
  servers.push(server)
  const tag = `${++n}-${Math.random().toString(36).slice(2, 8)}`
  const access = `at-${tag}`
  server.accept = new Set(o.accept ? [access] : [])
  server.oauth = { clientId: 'c', clientSecret: `cs-${tag}`, auth: 'client_secret_post', refreshToken: `rt-${tag}`, expiresIn: 600, requests: [], refreshes: 0 }
  const cred = await creds.create(vaultId, {
    auth: {
      type: 'mcp_oauth',
      mcp_server_url: o.url ?? server.url,
      access_token: access,
      expires_at: o.expiresInMs === undefined ? null : new Date(Date.now() + o.expiresInMs).toISOString(),
      refresh:
        o.refresh === false
          ? null
          : {
              client_id: 'c',
              refresh_token: `rt-${tag}`,
              token_endpoint: o.tokenEndpoint ?? `${server.origin}/token`,
              token_endpoint_auth: { type: 'client_secret_post', client_secret: `cs-${tag}` },
            },
    },
  } as any)
  return { server, cred, tag, validate: () => creds.mcpOAuthValidate(cred.id, { vault_id: vaultId }) as Promise<any> }
}

t.test('valid: the server takes the token; no refresh', async (t) => {
  const { server, cred, validate } = await setup({ accept: true })
  const v = await validate()
  t.match(v, {
    type: 'vault_credential_validation',
    credential_id: cred.id,
    vault_id: vaultId,
    status: 'valid',
    has_refresh_token: true,
    mcp_probe: null,
    refresh: null,
  })
  t.ok(Date.parse(v.validated_at) > 0)
  t.equal(server.oauth!.requests.length, 0)
  t.ok(server.calls.length === 0 && server.listings === 1, 'initialize and tools/list, no call')
  t.equal(server.open, 0, 'the probe’s MCP session was ended')
})

t.test('refused, refreshed, probed again: valid, the new token stored once', async (t) => {
  const { server, cred, validate } = await setup()
  const v = await validate()
  t.match(v, { status: 'valid', mcp_probe: null, refresh: { status: 'succeeded', http_response: null } })
  t.equal(server.oauth!.refreshes, 1)
  t.ok(server.authorizations.at(-1)?.startsWith('Bearer access-1-'), 'probed again with the new token')
  const stored = await creds.retrieve(cred.id, { vault_id: vaultId })
  t.ok(Date.parse((stored.auth as any).expires_at) > Date.now() + 500_000, 'expires_at from expires_in')
  t.match(await validate(), { status: 'valid', refresh: null }, 'the stored token works: no second refresh')
  t.equal(server.oauth!.refreshes, 1)
})

t.test('a person’s update during a refresh wins for the access token; the rotated refresh token is still stored', async (t) => {
  const { server, cred, validate } = await setup()
  server.oauth!.delayMs = 1500
  const validating = validate()
  await until('the refresh to be asked', async () => server.oauth!.requests.length === 1, 10_000, 10)
  // The person's new access token, stored while the token endpoint answers.
  server.accept!.add('at-by-hand')
  await creds.update(cred.id, { vault_id: vaultId, auth: { type: 'mcp_oauth', access_token: 'at-by-hand' } } as any)
  const v = await validating
  t.match(v, { status: 'valid', refresh: { status: 'succeeded' } })
  t.ok(server.authorizations.at(-1) === 'Bearer at-by-hand', 'probed again with the stored token: the person’s, not the refreshed one')
  server.oauth!.delayMs = 0
  // The refresh token the endpoint rotated was stored: refused now, the credential refreshes with it.
  server.accept!.clear()
  t.match(await validate(), { status: 'valid', refresh: { status: 'succeeded' } })
  t.equal(server.oauth!.refreshes, 2)
  t.match(server.oauth!.requests[1]!.form.refresh_token, /^refresh-1-/, 'the second refresh used the rotated token')
})

t.test('an expired token is refreshed before the probe', async (t) => {
  const { server, validate } = await setup({ expiresInMs: 5_000 })
  t.match(await validate(), { status: 'valid', mcp_probe: null, refresh: { status: 'succeeded' } })
  t.equal(server.oauth!.refreshes, 1)
  t.notOk(
    server.authorizations.some((a) => a?.includes('at-')),
    'the expired token was not sent',
  )
})

t.test('refused and the refresh refused: invalid, with the failed probe and the token endpoint’s answer', async (t) => {
  const { server, tag, validate } = await setup()
  server.oauth!.failWith = 400
  // An endpoint that repeats what it was sent: the refresh token and client secret are shown redacted.
  server.oauth!.echo = true
  const v = await validate()
  t.match(v, {
    status: 'invalid',
    has_refresh_token: true,
    mcp_probe: { method: 'initialize', http_response: { status_code: 401, content_type: /json/, body: /invalid_token/, body_truncated: false } },
    refresh: { status: 'failed', http_response: { status_code: 400, content_type: /json/, body: /invalid_grant/, body_truncated: false } },
  })
  t.notOk(JSON.stringify(v).includes(tag), 'no secret shown')
  t.match(v.refresh.http_response.body, /"refresh_token":"\[redacted\]"/)
})

t.test('refused without a refresh token: invalid, no_refresh_token', async (t) => {
  const { validate } = await setup({ refresh: false })
  t.match(await validate(), {
    status: 'invalid',
    has_refresh_token: false,
    mcp_probe: { method: 'initialize' },
    refresh: { status: 'no_refresh_token', http_response: null },
  })
})

t.test('a token endpoint that cannot be reached: unknown, connect_error', async (t) => {
  const { validate } = await setup({ tokenEndpoint: 'http://127.0.0.1:9/token' })
  t.match(await validate(), { status: 'unknown', refresh: { status: 'connect_error', http_response: null }, mcp_probe: { method: 'initialize' } })
})

t.test('a server that cannot be reached: unknown, the failed step without an answer', async (t) => {
  const { validate } = await setup({ url: 'http://127.0.0.1:9/mcp' })
  t.match(await validate(), { status: 'unknown', mcp_probe: { method: 'initialize', http_response: null }, refresh: null })
})

t.test('the address rules of MCP connections hold: a server or token endpoint on an address not let through is not reached', async (t) => {
  // 127.0.0.2 is the loopback too, and reachable, but TROUPE_MCP_ALLOW_HOSTS lets only 127.0.0.1 through.
  const unlisted = await startFakeMcpServer({ host: '127.0.0.2' })
  servers.push(unlisted)
  unlisted.accept = new Set()
  unlisted.oauth = { clientId: 'c', auth: 'none', refreshToken: 'rt-unlisted', requests: [], refreshes: 0 }
  const { validate } = await setup({ url: unlisted.url, accept: true })
  t.match(await validate(), { status: 'unknown', mcp_probe: { method: 'initialize', http_response: null } })
  t.equal(unlisted.authorizations.length, 0, 'the server was not reached')
  const { validate: again } = await setup({ tokenEndpoint: `${unlisted.origin}/token` })
  t.match(await again(), { status: 'unknown', refresh: { status: 'connect_error' } })
  t.equal(unlisted.oauth.requests.length, 0, 'the token endpoint was not reached')
})

t.test('bad input: a static bearer is 400; an archived credential is invalid without a probe; a missing one 404', async (t) => {
  const bearer = await creds.create(vaultId, { auth: { type: 'static_bearer', mcp_server_url: 'https://x.example.com/mcp', token: 'tok-123456' } })
  isError(t, await failure(creds.mcpOAuthValidate(bearer.id, { vault_id: vaultId })), 400, 'invalid_request_error', /only mcp_oauth/)
  const { server, cred, validate } = await setup({ accept: true })
  await creds.archive(cred.id, { vault_id: vaultId })
  t.match(await validate(), { status: 'invalid', has_refresh_token: false, mcp_probe: null, refresh: null })
  t.equal(server.authorizations.length, 0, 'no probe')
  isError(t, await failure(creds.mcpOAuthValidate('vcrd_01NOPE', { vault_id: vaultId })), 404, 'not_found_error', /vcrd_01NOPE/)
})
