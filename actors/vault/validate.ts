import { fail } from '../../protocol/errors/fail.js'
import type { CredentialValidation } from '../../protocol/schemas/vault.js'
import { now } from '../../protocol/time.js'
import type { Keyring } from '../kit/index.js'
import { type Fetch, shown } from './http-answer.js'
import { probe, type ProbeOutcome } from './probe.js'
import { opened } from './credentials.js'
import type { StoredCredential } from './state.js'
import { basisOf, expired, type Refreshed, type TokenRefresher } from './tokens.js'

type Probe = NonNullable<CredentialValidation['mcp_probe']>
type RefreshShown = NonNullable<CredentialValidation['refresh']>

/**
 * `mcp_oauth_validate` (WIRE §15, and the official client's documentation of `CredentialValidation`): the credential's
 * MCP server probed with its access token (`probe.ts`: `initialize`, then `tools/list`), refreshed first when it has
 * expired, and refreshed once and probed again when the server refuses it (both through the owner's one refresh path,
 * `TokenRefresher`, so new tokens are stored once and a failure makes its webhook event). `status`: `valid`, the last
 * probe went through; `invalid`, the server refused the token (401, 403) and no refresh made it work, the token endpoint
 * refused the refresh, or no access token is stored (archived); `unknown`, nothing said either way (a server or token
 * endpoint unreachable, another status). `mcp_probe` is the step that failed (null when the last probe went through or
 * none was made); `refresh` the refresh tried (null when none), its answer shown only when it `failed`. Runs beside the
 * vault's ops, not in its mailbox: at most a probe, a refresh and a probe (3.5 s a step, 6 s).
 */
export async function validateCredential(
  c: StoredCredential,
  vaultId: string,
  ring: () => Keyring,
  tokens: TokenRefresher,
  fetch: Fetch,
): Promise<CredentialValidation> {
  const cred = c.credential
  if (cred.auth.type !== 'mcp_oauth') throw fail('invalid_request', `credential ${cred.id} is ${cred.auth.type}; only mcp_oauth credentials are validated`)
  const url = cred.auth.mcp_server_url
  let cur = c
  let refreshed: RefreshShown | null = null
  const answer = (status: CredentialValidation['status'], mcp_probe: Probe | null = null): CredentialValidation => ({
    type: 'vault_credential_validation',
    credential_id: cred.id,
    vault_id: vaultId,
    status,
    has_refresh_token: canRefresh(cur),
    mcp_probe,
    refresh: refreshed,
    validated_at: now(),
  })
  if (cred.archived_at || !c.secrets.access_token) return answer('invalid')
  const keyring = ring()
  // Every secret met on the way, kept out of what is shown of the answers.
  const secrets: string[] = []
  const open = (field: 'access_token' | 'refresh_token' | 'client_secret') => {
    const sealed = cur.secrets[field]
    const v = sealed ? opened(keyring, cred.id, field, sealed) : undefined
    if (v) secrets.push(v)
    return v
  }
  const refresh = async (): Promise<Refreshed['status']> => {
    open('refresh_token')
    open('client_secret')
    const r = await tokens.refresh(vaultId, cred.id, basisOf(cur))
    const o = r.outcome
    if (o?.status === 'succeeded') secrets.push(o.tokens.access_token, o.tokens.refresh_token ?? '')
    refreshed = { status: r.status, http_response: r.status === 'failed' && o && 'answer' in o ? shown(o.answer, secrets) : null }
    if (r.status === 'succeeded') cur = r.stored
    return r.status
  }
  const failedRefresh = (status: Refreshed['status'], p: Probe | null = null) => answer(status === 'connect_error' ? 'unknown' : 'invalid', p)

  if (expired(cur.credential) && canRefresh(cur)) {
    const r = await refresh()
    if (r !== 'succeeded') return failedRefresh(r)
  }
  // Archived while it was refreshed: its secrets are gone.
  const probed = async () => {
    const token = open('access_token')
    return token === undefined ? undefined : probe(fetch, url, token)
  }
  let p = await probed()
  if (!p) return answer('invalid')
  if (p.ok) return answer('valid')
  if (refusedBy(p) && !refreshed) {
    if (!canRefresh(cur)) {
      refreshed = { status: 'no_refresh_token', http_response: null }
      return answer('invalid', shownProbe(p, secrets))
    }
    const r = await refresh()
    if (r !== 'succeeded') return failedRefresh(r, shownProbe(p, secrets))
    p = await probed()
    if (!p) return answer('invalid')
    if (p.ok) return answer('valid')
  }
  return answer(refusedBy(p) ? 'invalid' : 'unknown', shownProbe(p, secrets))
}

const canRefresh = (c: StoredCredential) =>
  !c.credential.archived_at && c.credential.auth.type === 'mcp_oauth' && !!c.credential.auth.refresh && !!c.secrets.refresh_token

const refusedBy = (p: ProbeOutcome) => !p.ok && (p.answer?.status === 401 || p.answer?.status === 403)

const shownProbe = (p: ProbeOutcome, secrets: string[]): Probe | null =>
  p.ok ? null : { method: p.method, http_response: p.answer ? shown(p.answer, secrets) : null }
