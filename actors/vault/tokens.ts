import type { Logger } from 'pino'
import type { BodyOf } from '../../protocol/ops/define.js'
import { VaultKind } from '../../protocol/ops/vault.js'
import type { Credential } from '../../protocol/schemas/vault.js'
import { now } from '../../protocol/time.js'
import type { ActorClient, DurableState, Keyring, Outbox } from '../kit/index.js'
import { askOwner } from './ask.js'
import type { Fetch } from './http-answer.js'
import { opened } from './credentials.js'
import { type RefreshOutcome, refreshGrant, type Tokens } from './oauth.js'
import { secretAad, type StoredCredential, type VaultState } from './state.js'

/** A token this close to its `expires_at` counts as expired: refreshed before it is used, not after a 401. */
export const EXPIRY_MARGIN_MS = 30_000
/** How long a token endpoint may take to answer a refresh (inside an op's 10 s actor call). */
export const REFRESH_TIMEOUT_MS = 6_000

/** Whether an OAuth credential's access token has expired, or will within `EXPIRY_MARGIN_MS`. */
export function expired(c: Credential, at = Date.now()): boolean {
  return c.auth.type === 'mcp_oauth' && c.auth.expires_at !== null && Date.parse(c.auth.expires_at) - at <= EXPIRY_MARGIN_MS
}

/** The basis of a credential's bearer: the nonce its token is sealed with, new at every seal (shown, never a secret). */
export const basisOf = (c: StoredCredential): string | undefined => (c.secrets.access_token ?? c.secrets.token)?.nonce

/**
 * A refresh as the vault's owner made it (or found made): `succeeded` with the credential as stored after it (also when
 * another refresh had replaced the token already: `outcome` is then undefined); otherwise why not, with the endpoint's
 * answer when it gave one.
 */
export type Refreshed =
  | { status: 'succeeded'; stored: StoredCredential; outcome?: RefreshOutcome }
  | { status: 'failed' | 'connect_error' | 'no_refresh_token'; reason: string; outcome?: RefreshOutcome }

export interface TokenDeps {
  states: DurableState<VaultState, typeof VaultKind>
  /** The keyring, throwing the catalog's error when there is none or hosts disagree. */
  sealer: () => Keyring
  outbox: Outbox
  log: Logger
  /** How the token endpoint is reached (http-answer.ts `Fetch`). */
  fetch: Fetch
  /** Where refreshed tokens are stored: the vault's owner, this host or the next. */
  client: ActorClient
}

/**
 * OAuth refreshes of a host's vaults' credentials (docs/ARCHITECTURE.md, "Vaults"). Only the vault's owner refreshes,
 * and one refresh at a time per credential (`inFlight`): sessions on any host that find a token expired or refused ask
 * the owner (`credentials.resolve`), so two hosts asking at the same moment make one request to the token endpoint. Its
 * new tokens are sealed and stored by an exclusive op of the vault's owner (this host, or the next one if the vault moved
 * meanwhile) that compares first: only a credential still holding the token that was refreshed takes them (the
 * compare-and-set on the credential, inside the fenced write of its vault's record); a caller whose token was replaced meanwhile gets the stored one, and never refreshes again with a
 * refresh token that has been rotated away. A failed refresh makes the webhook event `vault_credential.refresh_failed`.
 */
export class TokenRefresher {
  private readonly inFlight = new Map<string, Promise<Refreshed>>()

  constructor(private readonly d: TokenDeps) {}

  /** Refreshes credential `credentialId` of `vaultId` unless its token is no longer the one of `basis`. */
  refresh(vaultId: string, credentialId: string, basis: string | undefined): Promise<Refreshed> {
    let p = this.inFlight.get(credentialId)
    if (!p) {
      p = this.run(vaultId, credentialId, basis).finally(() => this.inFlight.delete(credentialId))
      this.inFlight.set(credentialId, p)
    }
    return p
  }

  private async run(vaultId: string, credentialId: string, basis: string | undefined): Promise<Refreshed> {
    const s = await this.d.states.read(vaultId)
    const c = s?.credentials.find((x) => x.credential.id === credentialId)
    if (!c || c.credential.archived_at || c.credential.auth.type !== 'mcp_oauth') {
      return { status: 'failed', reason: `credential ${credentialId} is no longer active` }
    }
    if (basisOf(c) !== basis) return { status: 'succeeded', stored: c }
    const r = c.credential.auth.refresh
    if (!r || !c.secrets.refresh_token) return { status: 'no_refresh_token', reason: `credential ${credentialId} has no refresh token` }
    const ring = this.d.sealer()
    const refreshToken = opened(ring, credentialId, 'refresh_token', c.secrets.refresh_token)
    const clientSecret = c.secrets.client_secret && opened(ring, credentialId, 'client_secret', c.secrets.client_secret)
    const outcome = await refreshGrant(
      r,
      { refresh_token: refreshToken, ...(clientSecret ? { client_secret: clientSecret } : {}) },
      REFRESH_TIMEOUT_MS,
      this.d.fetch,
    )
    if (outcome.status !== 'succeeded') {
      const at = Date.now()
      this.d.log.warn({ vault: vaultId, credential: credentialId, status: outcome.status, reason: outcome.reason }, 'an OAuth refresh failed')
      // One event per failed attempt (its id from the credential and the attempt's time).
      await this.d.outbox.publish('vault_credential.refresh_failed', credentialId, at, `${credentialId}@${at}`, vaultId).catch((err) => {
        this.d.log.error({ err, credential: credentialId }, 'the refresh_failed webhook event could not be published')
      })
      return { status: outcome.status, reason: `the OAuth refresh of credential ${credentialId} failed: ${outcome.reason}`, outcome }
    }
    try {
      const stored = await this.store(vaultId, c, outcome.tokens, ring)
      return { status: 'succeeded', stored, outcome }
    } catch (err) {
      // The endpoint may have rotated the refresh token away: the next refresh will say so (refresh_failed).
      this.d.log.error({ err, vault: vaultId, credential: credentialId }, 'refreshed OAuth tokens could not be stored')
      throw err
    }
  }

  /**
   * Stores refreshed tokens, sealed here, through the vault's owner (`credentials.store_refreshed`, `storeRefreshed`):
   * this host while it still owns the vault, the next owner when the vault moved while the endpoint answered, so a
   * hand-over does not lose a rotated refresh token. The credential as stored after it.
   */
  private async store(vaultId: string, was: StoredCredential, tokens: Tokens, ring: Keyring): Promise<StoredCredential> {
    const id = was.credential.id
    const body = {
      credential_id: id,
      access_basis: was.secrets.access_token!.nonce,
      access_token: ring.seal(tokens.access_token, secretAad(id, 'access_token')),
      expires_at: tokens.expires_in === undefined ? null : new Date(Date.now() + tokens.expires_in * 1000).toISOString(),
      ...(tokens.refresh_token && was.secrets.refresh_token
        ? { refresh_basis: was.secrets.refresh_token.nonce, refresh_token: ring.seal(tokens.refresh_token, secretAad(id, 'refresh_token')) }
        : {}),
    }
    const stored = await askOwner(() => this.d.client.call(VaultKind.ops['credentials.store_refreshed'], { id: vaultId, body }))
    return (stored ?? was) as StoredCredential
  }
}

/**
 * `credentials.store_refreshed` on the vault's state: each new token stored only where the credential still holds what
 * was refreshed, the access token (with `expires_at`) while its access token is the one replaced, a rotated refresh
 * token while its refresh token is the one used (a person's update meanwhile wins). Null: the credential is gone.
 */
export function storeRefreshed(
  s: VaultState,
  b: BodyOf<(typeof VaultKind.ops)['credentials.store_refreshed']>,
): { state?: VaultState; reply: StoredCredential | null } {
  const cur = s.credentials.find((x) => x.credential.id === b.credential_id)
  if (!cur || cur.credential.archived_at || cur.credential.auth.type !== 'mcp_oauth') return { reply: cur ?? null }
  const sameAccess = cur.secrets.access_token?.nonce === b.access_basis
  const sameRefresh = b.refresh_token !== undefined && cur.secrets.refresh_token?.nonce === b.refresh_basis
  if (!sameAccess && !sameRefresh) return { reply: cur }
  const secrets = { ...cur.secrets }
  let auth = cur.credential.auth
  if (sameAccess) {
    secrets.access_token = b.access_token
    auth = { ...auth, expires_at: b.expires_at }
  }
  if (sameRefresh) secrets.refresh_token = b.refresh_token
  const next: StoredCredential = { ...cur, credential: { ...cur.credential, auth, updated_at: now() }, secrets }
  return { state: { ...s, credentials: s.credentials.map((x) => (x === cur ? next : x)) }, reply: next }
}
