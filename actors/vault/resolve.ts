import type { ResolvedCredential } from '../../protocol/schemas/vault.js'
import { secretAad, type StoredCredential, type VaultState } from './state.js'
import { basisOf, expired, type TokenRefresher } from './tokens.js'

/** A URL as compared with a credential's `mcp_server_url`: WHATWG-normalized (host case, default port, empty path). */
export function sameUrl(a: string, b: string): boolean {
  const norm = (u: string) => {
    try {
      return new URL(u).href
    } catch {
      return u
    }
  }
  return norm(a) === norm(b)
}

/** The vault's active credential for MCP server `url` (one at most: the vault refuses a second, `credential_duplicate`). */
export function mcpCredentialOf(s: VaultState, url: string): StoredCredential | undefined {
  return s.credentials.find((c) => {
    const a = c.credential.auth
    return !c.credential.archived_at && a.type !== 'environment_variable' && sameUrl(a.mcp_server_url, url)
  })
}

/**
 * `credentials.resolve` on the vault's owner: the bearer of the vault's credential for `url`, sealed as stored (the
 * session's host opens it; no plaintext crosses the wire). An OAuth token is refreshed first when it has expired, or
 * when the caller says the server refused it (`stale`, its basis) and it is still the stored one; a refresh that fails
 * answers `failure` instead of a token (the connection then counts as refused). Without a refresh configuration an
 * expired token is sent as it is: the server decides.
 */
export async function resolveCredential(s: VaultState, url: string, stale: string | undefined, tokens: TokenRefresher): Promise<ResolvedCredential> {
  let c = mcpCredentialOf(s, url)
  if (!c) return { credential_id: null }
  const id = c.credential.id
  const auth = c.credential.auth
  if (auth.type === 'static_bearer') {
    const token = c.secrets.token
    return token
      ? { credential_id: id, token, aad: secretAad(id, 'token'), basis: token.nonce }
      : { credential_id: id, failure: `credential ${id} holds no token` }
  }
  const basis = basisOf(c)
  if (auth.type === 'mcp_oauth' && auth.refresh && (expired(c.credential) || (stale !== undefined && stale === basis))) {
    const r = await tokens.refresh(s.vault.id, id, basis)
    if (r.status !== 'succeeded') return { credential_id: id, failure: r.reason }
    c = r.stored
  }
  const token = c.secrets.access_token
  return token
    ? { credential_id: id, token, aad: secretAad(id, 'access_token'), basis: token.nonce }
    : { credential_id: id, failure: `credential ${id} holds no access token` }
}
