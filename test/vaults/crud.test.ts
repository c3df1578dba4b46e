import t from 'tap'
import { stack } from '../helpers/stack.js'
import { raw } from '../helpers/troupe.js'
import { failure, isError } from '../sessions/_helpers.js'
import { envVariable, filesBeneath, holdsSecret, keyringFile, mcpOAuth, newKey, SECRETS, staticBearer, storedVaultMessages } from './_helpers.js'

/** Vaults and credentials through the official client, on a server with a keyring. */
const s = await stack({ env: { TROUPE_VAULT_KEYRING_FILE: keyringFile([{ id: 'k1', key: newKey() }]) } })
const { client } = s
const vaults = client.beta.vaults
const creds = client.beta.vaults.credentials
/** Every response body the test saw, to check no secret was ever returned. */
const seen: string[] = []
const keep = <T>(v: T): T => {
  seen.push(JSON.stringify(v))
  return v
}

t.test('vault create, get, update, list, archive, delete', async (t) => {
  const v = keep(await vaults.create({ display_name: 'Alice', metadata: { user: 'u1' } }))
  t.match(v.id, /^vlt_/)
  t.same(Object.keys(v).sort(), ['archived_at', 'created_at', 'display_name', 'id', 'metadata', 'type', 'updated_at'])
  t.equal(v.type, 'vault')
  t.equal(v.archived_at, null)
  t.same(keep(await vaults.retrieve(v.id)), v)
  const u = keep(await vaults.update(v.id, { display_name: 'Alice B', metadata: { user: null, team: 't' } }))
  t.equal(u.display_name, 'Alice B')
  t.same(u.metadata, { team: 't' })
  t.same(keep(await vaults.update(v.id, {})), u, 'an empty update changes nothing')
  t.equal(keep(await vaults.update(v.id, { display_name: null })).display_name, 'Alice B', 'null keeps the name')
  const ids = []
  for await (const x of vaults.list({ limit: 1 })) ids.push(x.id)
  t.ok(ids.includes(v.id), 'listed, paging one at a time')
  const a = keep(await vaults.archive(v.id))
  t.ok(a.archived_at)
  t.same(keep(await vaults.archive(v.id)), a, 'archive again: as it is')
  const listed = (await vaults.list()).data.map((x) => x.id)
  t.notOk(listed.includes(v.id), 'archived vaults are not listed by default')
  t.ok((await vaults.list({ include_archived: true })).data.some((x) => x.id === v.id))
  isError(t, await failure(vaults.update(v.id, { display_name: 'x' })), 409, 'conflict_error', /archived/, 'vault_read_only')
  t.same(keep(await vaults.delete(v.id)), { id: v.id, type: 'vault_deleted' })
  isError(t, await failure(vaults.retrieve(v.id)), 404, 'not_found_error', /Vault vlt_\w+ not found/, 'vault_not_found')
  isError(t, await failure(vaults.delete(v.id)), 404, 'not_found_error', /not found/)
  t.notOk(
    (await vaults.list({ include_archived: true })).data.some((x) => x.id === v.id),
    'a deleted vault is not listed',
  )
})

t.test('credentials of each type: secrets never returned', async (t) => {
  const v = await vaults.create({ display_name: 'Bob' })
  const bearer = keep(await creds.create(v.id, { auth: staticBearer(), display_name: 'bearer', metadata: { k: 'v' } }))
  t.match(bearer.id, /^vcrd_/)
  t.equal(bearer.type, 'vault_credential')
  t.equal(bearer.vault_id, v.id)
  t.same(bearer.auth, { type: 'static_bearer', mcp_server_url: 'https://mcp.example.com/mcp' })
  t.same(bearer.metadata, { k: 'v' })
  const oauth = keep(await creds.create(v.id, { auth: mcpOAuth() }))
  t.same(oauth.auth, {
    type: 'mcp_oauth',
    mcp_server_url: 'https://oauth.example.com/mcp',
    expires_at: (oauth.auth as any).expires_at,
    refresh: {
      client_id: 'client-123',
      token_endpoint: 'https://auth.example.com/token',
      token_endpoint_auth: { type: 'client_secret_post' },
      resource: null,
      scope: 'read write',
    },
  })
  t.equal(oauth.display_name, null)
  const envv = keep(await creds.create(v.id, { auth: envVariable() }))
  t.same(envv.auth, {
    type: 'environment_variable',
    secret_name: 'API_KEY',
    injection_location: { body: true, header: true },
    networking: { type: 'limited', allowed_hosts: ['api.example.com', '*.example.org', '192.0.2.1'] },
  })
  t.same(keep(await creds.retrieve(bearer.id, { vault_id: v.id })), bearer)
  const listed = keep((await creds.list(v.id)).data)
  t.same(
    listed.map((c) => c.id),
    [envv.id, oauth.id, bearer.id],
    'newest first',
  )
  const paged = []
  for await (const c of creds.list(v.id, { limit: 1 })) paged.push(c.id)
  t.same(paged, [envv.id, oauth.id, bearer.id], 'paged one at a time')

  // Updates: secrets replaced, shown fields patched, types fixed.
  const b2 = keep(await creds.update(bearer.id, { vault_id: v.id, auth: { type: 'static_bearer', token: SECRETS.rotated }, display_name: 'renamed' }))
  t.equal(b2.display_name, 'renamed')
  t.same(b2.auth, bearer.auth)
  t.ok(b2.updated_at >= bearer.updated_at)
  const o2 = keep(
    await creds.update(oauth.id, {
      vault_id: v.id,
      auth: { type: 'mcp_oauth', expires_at: null, refresh: { scope: '', token_endpoint_auth: { type: 'client_secret_basic', client_secret: 'x' } } },
    }),
  )
  t.equal((o2.auth as any).expires_at, null)
  t.equal((o2.auth as any).refresh.scope, null, '"" clears the scope')
  t.same((o2.auth as any).refresh.token_endpoint_auth, { type: 'client_secret_basic' })
  const e2 = keep(
    await creds.update(envv.id, {
      vault_id: v.id,
      auth: { type: 'environment_variable', networking: { type: 'unrestricted' }, injection_location: { body: false } },
    }),
  )
  t.same((e2.auth as any).networking, { type: 'unrestricted' })
  t.same((e2.auth as any).injection_location, { body: false, header: true })
  isError(
    t,
    await failure(creds.update(envv.id, { vault_id: v.id, auth: { type: 'environment_variable', injection_location: { header: false } } })),
    400,
    'invalid_request_error',
    /auth\.injection_location: at least one/,
  )
  isError(
    t,
    await failure(creds.update(bearer.id, { vault_id: v.id, auth: { type: 'mcp_oauth', access_token: 'x' } })),
    400,
    'invalid_request_error',
    /auth\.type: credential vcrd_\w+ is static_bearer/,
    'credential_type_mismatch',
  )

  const val = keep(await creds.mcpOAuthValidate(oauth.id, { vault_id: v.id }))
  t.match(val, {
    type: 'vault_credential_validation',
    credential_id: oauth.id,
    vault_id: v.id,
    // Its server (oauth.example.com) cannot be reached from here: nothing said either way (test/vaults/validate.test.ts).
    status: 'unknown',
    has_refresh_token: true,
    mcp_probe: { method: 'initialize', http_response: null },
    refresh: null,
  })
  isError(t, await failure(creds.mcpOAuthValidate(bearer.id, { vault_id: v.id })), 400, 'invalid_request_error', /only mcp_oauth/)

  // One active credential per MCP server URL, and per variable name.
  isError(
    t,
    await failure(creds.create(v.id, { auth: staticBearer() })),
    409,
    'conflict_error',
    /auth\.mcp_server_url: vault vlt_\w+ already has an active credential/,
  )
  isError(t, await failure(creds.create(v.id, { auth: mcpOAuth('https://mcp.example.com/mcp') })), 409, 'conflict_error', /mcp_server_url/)
  isError(t, await failure(creds.create(v.id, { auth: envVariable() })), 409, 'conflict_error', /auth\.secret_name: .*API_KEY/)

  // Archive: kept, read-only, its secrets gone; then another for the same URL may be made.
  const ba = keep(await creds.archive(bearer.id, { vault_id: v.id }))
  t.ok(ba.archived_at)
  isError(t, await failure(creds.update(bearer.id, { vault_id: v.id, display_name: 'x' })), 409, 'conflict_error', /archived/, 'credential_archived')
  t.notOk(
    (await creds.list(v.id)).data.some((c) => c.id === bearer.id),
    'archived credentials are not listed by default',
  )
  t.ok((await creds.list(v.id, { include_archived: true })).data.some((c) => c.id === bearer.id))
  const again = keep(await creds.create(v.id, { auth: staticBearer() }))
  t.not(again.id, bearer.id)

  t.same(keep(await creds.delete(again.id, { vault_id: v.id })), { id: again.id, type: 'vault_credential_deleted' })
  isError(
    t,
    await failure(creds.retrieve(again.id, { vault_id: v.id })),
    404,
    'not_found_error',
    /Credential vcrd_\w+ not found in vault/,
    'credential_not_found',
  )

  // Archiving the vault archives its credentials; deleting it deletes them.
  await vaults.archive(v.id)
  const after = keep((await creds.list(v.id, { include_archived: true })).data)
  t.ok(
    after.every((c) => c.archived_at),
    'every credential archived with its vault',
  )
  isError(t, await failure(creds.create(v.id, { auth: staticBearer('https://new.example.com') })), 409, 'conflict_error', /archived/, 'vault_read_only')
  await vaults.delete(v.id)
  isError(t, await failure(creds.retrieve(oauth.id, { vault_id: v.id })), 404, 'not_found_error', /Vault/)
})

t.test('Idempotency-Key: a retried create answers with what was stored', async (t) => {
  const v = await vaults.create({ display_name: 'keyed' }, { headers: { 'idempotency-key': 'vault-key-1' } })
  t.same(await vaults.create({ display_name: 'keyed' }, { headers: { 'idempotency-key': 'vault-key-1' } }), v)
  isError(
    t,
    await failure(vaults.create({ display_name: 'other' }, { headers: { 'idempotency-key': 'vault-key-1' } })),
    422,
    'invalid_request_error',
    /Idempotency-Key/,
  )
  const c = await creds.create(v.id, { auth: staticBearer() }, { headers: { 'idempotency-key': 'cred-key-1' } })
  t.same(await creds.create(v.id, { auth: staticBearer() }, { headers: { 'idempotency-key': 'cred-key-1' } }), c)
  t.equal((await creds.list(v.id)).data.length, 1)
})

t.test('limits: 20 active credentials a vault', async (t) => {
  const v = await vaults.create({ display_name: 'full' })
  for (let i = 0; i < 20; i++) await creds.create(v.id, { auth: staticBearer(`https://m${i}.example.com/mcp`) })
  isError(
    t,
    await failure(creds.create(v.id, { auth: staticBearer('https://m20.example.com/mcp') })),
    400,
    'invalid_request_error',
    /already holds 20 active credentials/,
  )
})

t.test('bad input: types, unknown and immutable fields, ids', async (t) => {
  const v = await vaults.create({ display_name: 'bad' })
  const c = await creds.create(v.id, { auth: envVariable('BAD_ONE') })
  const o = await creds.create(v.id, { auth: mcpOAuth() })
  const post = (path: string, body: unknown) => raw(s.url, 'POST', path, body)
  const cases: Array<[string, unknown, RegExp]> = [
    ['/v1/vaults', {}, /display_name must be/],
    ['/v1/vaults', { display_name: '' }, /display_name/],
    ['/v1/vaults', { display_name: 'x'.repeat(256) }, /display_name/],
    ['/v1/vaults', { display_name: 7 }, /display_name must be a string/],
    ['/v1/vaults', { display_name: 'x', extra: 1 }, /extra is not a known field/],
    ['/v1/vaults', { display_name: 'x', metadata: ['a'] }, /metadata/],
    ['/v1/vaults', { display_name: 'x', metadata: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v'])) }, /metadata/],
    [`/v1/vaults/${v.id}`, { display_name: '' }, /display_name/],
    [`/v1/vaults/${v.id}/credentials`, {}, /auth must be/],
    [`/v1/vaults/${v.id}/credentials`, { auth: { type: 'basic' } }, /auth/],
    [`/v1/vaults/${v.id}/credentials`, { auth: { type: 'static_bearer', mcp_server_url: 'ftp://x', token: 't' } }, /mcp_server_url/],
    [`/v1/vaults/${v.id}/credentials`, { auth: { type: 'static_bearer', mcp_server_url: 'https://x.example', token: '' } }, /token/],
    [`/v1/vaults/${v.id}/credentials`, { auth: { ...staticBearer(), extra: 1 } }, /extra is not a known field/],
    [`/v1/vaults/${v.id}/credentials`, { auth: { ...envVariable(), secret_name: '1BAD' } }, /secret_name/],
    [`/v1/vaults/${v.id}/credentials`, { auth: { ...envVariable(), networking: { type: 'limited', allowed_hosts: ['https://x.com'] } } }, /allowed_hosts/],
    [`/v1/vaults/${v.id}/credentials`, { auth: { ...envVariable(), networking: { type: 'limited', allowed_hosts: ['::1'] } } }, /allowed_hosts/],
    [
      `/v1/vaults/${v.id}/credentials`,
      { auth: { ...envVariable(), networking: { type: 'limited', allowed_hosts: Array.from({ length: 17 }, (_, i) => `h${i}.example.com`) } } },
      /allowed_hosts/,
    ],
    [
      `/v1/vaults/${v.id}/credentials`,
      { auth: { ...mcpOAuth('https://p.example'), expires_at: '2001-01-01T00:00:00Z' } },
      /auth\.expires_at: must be in the future/,
    ],
    [`/v1/vaults/${v.id}/credentials/${c.id}`, { auth: { type: 'environment_variable', secret_name: 'OTHER' } }, /auth\.secret_name cannot be changed/],
    [`/v1/vaults/${v.id}/credentials/${o.id}`, { auth: { type: 'mcp_oauth', mcp_server_url: 'https://z.example' } }, /auth\.mcp_server_url cannot be changed/],
    [`/v1/vaults/${v.id}/credentials/${o.id}`, { auth: { type: 'mcp_oauth', refresh: { client_id: 'c2' } } }, /auth\.refresh\.client_id cannot be changed/],
    [
      `/v1/vaults/${v.id}/credentials/${o.id}`,
      { auth: { type: 'mcp_oauth', refresh: { token_endpoint: 'https://t.example' } } },
      /token_endpoint cannot be changed/,
    ],
    [`/v1/vaults/${v.id}/credentials/${c.id}`, { vault_id: v.id }, /vault_id is not a known field/],
  ]
  for (const [path, body, why] of cases) {
    const r = await post(path, body)
    t.equal(r.status, 400, `${path} ${JSON.stringify(body).slice(0, 80)}: 400`)
    t.match(r.json?.error?.message ?? '', why, why.source)
  }
  for (const path of [
    '/v1/vaults/vlt_missing',
    `/v1/vaults/${v.id}/credentials/vcrd_missing`,
    '/v1/vaults/env_x',
    `/v1/vaults/${v.id}/credentials/vlt_x`,
    '/v1/vaults/vlt_a.b',
  ]) {
    const r = await raw(s.url, 'GET', path)
    t.equal(r.status, 404, `${path}: 404`)
  }
  const q = await raw(s.url, 'GET', '/v1/vaults?limit=0')
  t.equal(q.status, 400)
  const qa = await raw(s.url, 'GET', `/v1/vaults/${v.id}/credentials?include_archived=yes`)
  t.equal(qa.status, 400)
})

t.test('no secret in any response, any log line, or the stored bytes', async (t) => {
  t.notOk(seen.some(holdsSecret), `${seen.length} response bodies hold no secret`)
  t.notOk(holdsSecret(s.troupe.logs()), 'the server log holds no secret')
  t.notOk(holdsSecret(s.troupe.stdout()), 'nor its standard output')
  const stored = await storedVaultMessages(s.nats.url)
  // A KV bucket keeps the last revision of each key: the vaults left hold 23 credentials with sealed secrets.
  const sealed = stored.filter((m) => Buffer.from(m.data).includes('secrets') && Buffer.from(m.data).includes('k1'))
  t.ok(sealed.length >= 3, `${sealed.length} stored vaults hold sealed secrets (key id k1)`)
  t.notOk(
    stored.some((m) => holdsSecret(Buffer.from(m.data).toString('latin1'))),
    'no stored message holds a secret in clear',
  )
  t.ok(
    filesBeneath(s.nats.dir).every((b) => !holdsSecret(b.toString('latin1'))),
    'no file of the JetStream store holds a secret in clear',
  )
})
