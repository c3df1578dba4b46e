import t from 'tap'
import { Keyring } from '../../actors/kit/keyring.js'
import { secretAad, type StoredCredential, type VaultState } from '../../actors/vault/state.js'
import { expired, storeRefreshed } from '../../actors/vault/tokens.js'

/**
 * The compare of a refresh's store (actors/vault/tokens.ts `storeRefreshed`): new tokens go only where the credential
 * still holds what was refreshed, so a refresh that lost to another, or to a person's update, changes nothing it should
 * not, and a rotated refresh token is never dropped while it is the one to use.
 */

const ring = new Keyring([{ id: 'k1', key: Buffer.alloc(32, 7) }])
const ID = 'vcrd_01TEST'
const seal = (v: string, f: 'access_token' | 'refresh_token') => ring.seal(v, secretAad(ID, f))
const open = (c: StoredCredential | null, f: 'access_token' | 'refresh_token') => ring.open(c!.secrets[f]!, secretAad(ID, f))

function state(archived = false): VaultState {
  const t0 = '2026-01-01T00:00:00.000Z'
  return {
    vault: { id: 'vlt_01TEST', type: 'vault', display_name: 'v', metadata: {}, created_at: t0, updated_at: t0, archived_at: null },
    credentials: [
      {
        credential: {
          id: ID,
          type: 'vault_credential',
          vault_id: 'vlt_01TEST',
          display_name: null,
          metadata: {},
          auth: {
            type: 'mcp_oauth',
            mcp_server_url: 'https://m.example.com/mcp',
            expires_at: t0,
            refresh: { client_id: 'c', token_endpoint: 'https://a.example.com/token', token_endpoint_auth: { type: 'none' }, resource: null, scope: null },
          },
          created_at: t0,
          updated_at: t0,
          archived_at: archived ? t0 : null,
        },
        secrets: archived ? {} : { access_token: seal('old-access', 'access_token'), refresh_token: seal('old-refresh', 'refresh_token') },
      },
    ],
  }
}

const body = (s: VaultState, o: { access?: string; refresh?: string } = {}) => {
  const c = s.credentials[0]!
  return {
    credential_id: ID,
    access_basis: o.access ?? c.secrets.access_token?.nonce ?? 'none',
    refresh_basis: o.refresh ?? c.secrets.refresh_token?.nonce ?? 'none',
    access_token: seal('new-access', 'access_token'),
    refresh_token: seal('new-refresh', 'refresh_token'),
    expires_at: '2030-01-01T00:00:00.000Z',
  }
}

t.test('the credential as refreshed: both tokens and expires_at stored', async (t) => {
  const s = state()
  const { state: next, reply } = storeRefreshed(s, body(s))
  t.ok(next)
  t.equal(open(reply, 'access_token'), 'new-access')
  t.equal(open(reply, 'refresh_token'), 'new-refresh')
  t.equal((reply!.credential.auth as any).expires_at, '2030-01-01T00:00:00.000Z')
  t.notOk(expired(reply!.credential, Date.parse('2029-12-31T00:00:00.000Z')))
  t.ok(expired(reply!.credential, Date.parse('2029-12-31T23:59:45.000Z')), 'within the margin: expired')
})

t.test('another refresh stored first: nothing changes, its tokens are the answer', async (t) => {
  const s = state()
  const first = storeRefreshed(s, body(s)).state!
  const { state: next, reply } = storeRefreshed(first, body(s))
  t.equal(next, undefined, 'nothing written')
  t.equal(reply, first.credentials[0])
})

t.test('a person replaced the access token meanwhile: theirs stays, the rotated refresh token is stored', async (t) => {
  const s = state()
  const b = body(s)
  s.credentials[0]!.secrets.access_token = seal('by-hand', 'access_token')
  const { reply } = storeRefreshed(s, b)
  t.equal(open(reply, 'access_token'), 'by-hand')
  t.equal(open(reply, 'refresh_token'), 'new-refresh')
  t.equal((reply!.credential.auth as any).expires_at, '2026-01-01T00:00:00.000Z', 'expires_at goes with the access token')
})

t.test('an archived or deleted credential takes nothing', async (t) => {
  const s = state(true)
  t.equal(storeRefreshed(s, body(state())).state, undefined)
  t.same(storeRefreshed({ ...s, credentials: [] }, body(state())), { reply: null })
})
