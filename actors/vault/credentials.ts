import { fail } from '../../protocol/errors/fail.js'
import type {
  Credential,
  CredentialAuth,
  CredentialAuthCreate,
  CredentialAuthUpdate,
  CredentialCreateInput,
  CredentialUpdateInput,
  McpOAuthRefresh,
} from '../../protocol/schemas/vault.js'
import { patchMetadata } from '../../protocol/schemas/common.js'
import type { Keyring, Sealed } from '../kit/index.js'
import { secretAad, type SecretField, type StoredCredential } from './state.js'

/**
 * A credential's `auth` as given on create or update, turned into what is stored: the fields shown, and the secrets
 * sealed with the keyring. Secrets are only ever sealed here (and refreshed tokens in tokens.ts); they are opened only
 * to be used: by a session's host for its MCP connections (secrets.ts), by the owner for a refresh (tokens.ts).
 */

type Secrets = StoredCredential['secrets']

const seal = (keyring: Keyring, id: string, secrets: Partial<Record<SecretField, string>>): Secrets => {
  const out: Secrets = {}
  for (const [field, value] of Object.entries(secrets) as Array<[SecretField, string | undefined]>) {
    if (value !== undefined) out[field] = keyring.seal(value, secretAad(id, field))
  }
  return out
}

/**
 * A secret of credential `id` opened, to be used. One that does not open (its key left the keyring, or it was altered)
 * is the operator's keyring trouble, said so: never a bare 500.
 */
export function opened(keyring: Keyring, id: string, field: SecretField, sealed: Sealed): string {
  try {
    return keyring.open(sealed, secretAad(id, field))
  } catch {
    throw fail('keyring_mismatch', `credential ${id}'s ${field} was sealed with key ${sealed.kid}, which does not open it with this host's keyring`)
  }
}

/** `expires_at` must be in the future (the official client's words). */
function checkExpiry(at: string | null | undefined): void {
  if (at != null && !(Date.parse(at) > Date.now())) throw fail('invalid_request', `auth.expires_at: must be in the future (was ${at})`)
}

function injection(given: { body?: boolean; header?: boolean } | undefined, base = { body: true, header: true }) {
  const next = { body: given?.body ?? base.body, header: given?.header ?? base.header }
  if (!next.body && !next.header) throw fail('invalid_request', 'auth.injection_location: at least one of body and header must be true')
  return next
}

/** The shown auth and the secrets of a create's `auth`. */
function fromCreate(a: CredentialAuthCreate): { auth: CredentialAuth; secrets: Partial<Record<SecretField, string>> } {
  switch (a.type) {
    case 'static_bearer':
      return { auth: { type: a.type, mcp_server_url: a.mcp_server_url }, secrets: { token: a.token } }
    case 'mcp_oauth': {
      checkExpiry(a.expires_at)
      const r = a.refresh ?? null
      const refresh: McpOAuthRefresh | null = r && {
        client_id: r.client_id,
        token_endpoint: r.token_endpoint,
        token_endpoint_auth: { type: r.token_endpoint_auth.type },
        resource: r.resource ?? null,
        scope: r.scope ?? null,
      }
      const clientSecret = r && 'client_secret' in r.token_endpoint_auth ? r.token_endpoint_auth.client_secret : undefined
      return {
        auth: { type: a.type, mcp_server_url: a.mcp_server_url, expires_at: a.expires_at ?? null, refresh },
        secrets: { access_token: a.access_token, refresh_token: r?.refresh_token, client_secret: clientSecret },
      }
    }
    case 'environment_variable':
      return {
        auth: { type: a.type, secret_name: a.secret_name, injection_location: injection(a.injection_location), networking: a.networking },
        secrets: { secret_value: a.secret_value },
      }
  }
}

/** A new credential: its secrets sealed for its id. */
export function createdCredential(keyring: Keyring, id: string, vaultId: string, b: CredentialCreateInput, t: string, createdBy?: string): StoredCredential {
  const { auth, secrets } = fromCreate(b.auth)
  const credential: Credential = {
    id,
    type: 'vault_credential',
    vault_id: vaultId,
    display_name: b.display_name ?? null,
    metadata: b.metadata ?? {},
    auth,
    created_at: t,
    updated_at: t,
    archived_at: null,
  }
  return { credential, ...(createdBy ? { created_by: createdBy } : {}), secrets: seal(keyring, id, secrets) }
}

/** The shown auth and the secrets replaced by an update's `auth` (of the credential's own type). */
function fromUpdate(
  id: string,
  cur: CredentialAuth,
  a: CredentialAuthUpdate,
): { auth: CredentialAuth; secrets: Partial<Record<SecretField, string>>; drop: SecretField[] } {
  if (a.type !== cur.type) throw fail('credential_type_mismatch', id, cur.type, a.type)
  if (a.type === 'static_bearer') return { auth: cur, secrets: { token: a.token ?? undefined }, drop: [] }
  if (a.type === 'environment_variable' && cur.type === 'environment_variable') {
    return {
      auth: { ...cur, networking: a.networking ?? cur.networking, injection_location: injection(a.injection_location, cur.injection_location) },
      secrets: { secret_value: a.secret_value ?? undefined },
      drop: [],
    }
  }
  if (a.type !== 'mcp_oauth' || cur.type !== 'mcp_oauth') throw fail('internal', 'unreachable credential type')
  checkExpiry(a.expires_at)
  const expires_at = a.expires_at === undefined ? cur.expires_at : a.expires_at
  const secrets: Partial<Record<SecretField, string>> = { access_token: a.access_token ?? undefined }
  // null removes the refresh configuration (and its secrets); an object changes the stored one.
  if (a.refresh === null) return { auth: { ...cur, expires_at, refresh: null }, secrets, drop: ['refresh_token', 'client_secret'] }
  if (a.refresh === undefined) return { auth: { ...cur, expires_at }, secrets, drop: [] }
  const r = a.refresh
  if (!cur.refresh) {
    throw fail('invalid_request', 'auth.refresh: this credential has no refresh configuration to change; create a credential with one instead')
  }
  let tea = cur.refresh.token_endpoint_auth
  const drop: SecretField[] = []
  if (r.token_endpoint_auth) {
    if (tea.type === 'none') {
      throw fail(
        'invalid_request',
        'auth.refresh.token_endpoint_auth: the credential uses "none"; only one using client_secret_basic or client_secret_post can change it',
      )
    }
    tea = { type: r.token_endpoint_auth.type }
    if (r.token_endpoint_auth.client_secret != null) secrets.client_secret = r.token_endpoint_auth.client_secret
  }
  secrets.refresh_token = r.refresh_token ?? undefined
  const scope = r.scope === undefined || r.scope === null ? cur.refresh.scope : r.scope === '' ? null : r.scope
  return { auth: { ...cur, expires_at, refresh: { ...cur.refresh, token_endpoint_auth: tea, scope } }, secrets, drop }
}

/** The credential with an update applied; the same object when nothing changes. */
export function updatedCredential(keyring: Keyring, c: StoredCredential, b: CredentialUpdateInput, t: string): StoredCredential {
  const cur = c.credential
  const changed = b.auth ? fromUpdate(cur.id, cur.auth, b.auth) : undefined
  const sealed = changed ? seal(keyring, cur.id, changed.secrets) : {}
  const secrets: Secrets = { ...c.secrets, ...sealed }
  for (const f of changed?.drop ?? []) delete secrets[f]
  const credential: Credential = {
    ...cur,
    display_name: b.display_name === undefined ? cur.display_name : b.display_name,
    metadata: b.metadata == null ? cur.metadata : patchMetadata(cur.metadata, b.metadata),
    auth: changed?.auth ?? cur.auth,
  }
  const same = JSON.stringify(credential) === JSON.stringify(cur) && !Object.keys(sealed).length && !changed?.drop.some((f) => c.secrets[f])
  if (same) return c
  return { ...c, credential: { ...credential, updated_at: t }, secrets }
}

/** The credential archived: its secrets purged, since nothing may use them again. */
export function archivedCredential(c: StoredCredential, t: string): StoredCredential {
  if (c.credential.archived_at) return c
  return { ...c, credential: { ...c.credential, archived_at: t, updated_at: t }, secrets: {} }
}

/** What another active credential of the vault must not share with `auth`: the MCP server URL, or the variable's name. */
export function identityOf(auth: CredentialAuth): { field: string; value: string; key: string } {
  return auth.type === 'environment_variable'
    ? { field: 'auth.secret_name', value: auth.secret_name, key: `env:${auth.secret_name}` }
    : { field: 'auth.mcp_server_url', value: auth.mcp_server_url, key: `mcp:${auth.mcp_server_url}` }
}
