import { type } from 'arktype'
import { HttpUrl, Metadata, MetadataPatch, boolParam, limitParam, notArray, pageParam, refused } from './common.js'
import { AllowedHost } from './environment.js'
import { listOf } from './list.js'
import { lazy } from './lazy.js'

/**
 * Vaults and their credentials on the wire (WIRE.md §15, the official client's `beta.vaults`). Shapes only: whether
 * the vault exists, is archived, has room, and whether an update's `auth` is of the credential's type are the vault
 * actor's. Secret fields (tokens, client secrets, values) are accepted here and never appear in a reply type.
 */

/** The longest secret accepted (characters): an OAuth access token may be a large JWT. */
export const MAX_SECRET_CHARS = 16_384

const DisplayName = lazy(() => type('1 <= string <= 255'))
const Secret = lazy(() => type(`1 <= string <= ${MAX_SECRET_CHARS}`))
const Url = lazy(() => type('string <= 2048').and(HttpUrl))
/** An environment variable's name, as a shell takes it. */
const SecretName = lazy(() =>
  type(/^[A-Za-z_][A-Za-z0-9_]{0,255}$/).describe('an environment variable name (a letter or _, then letters, digits or _; at most 256)'),
)
const Expiry = lazy(() => type('string.date.iso').or('null'))
const immutable = (field: string) => refused(`cannot be changed (${field} is fixed when the credential is created; archive it and create another)`)

export const VaultCreate = lazy(() => type({ '+': 'reject', display_name: DisplayName, 'metadata?': Metadata }))

export const VaultUpdate = lazy(() => type({ '+': 'reject', 'display_name?': DisplayName.or('null'), 'metadata?': MetadataPatch.or('null') }).narrow(notArray))

export const VaultListQuery = lazy(() => type({ 'include_archived?': boolParam, 'limit?': limitParam(100), 'page?': pageParam }))

const NoneAuth = lazy(() => type({ '+': 'reject', type: "'none'" }))
const SecretAuth = lazy(() => type({ '+': 'reject', type: "'client_secret_basic' | 'client_secret_post'", client_secret: Secret }))

const RefreshCreate = lazy(() =>
  type({
    '+': 'reject',
    client_id: '1 <= string <= 1024',
    refresh_token: Secret,
    token_endpoint: Url,
    token_endpoint_auth: NoneAuth.or(SecretAuth),
    'resource?': type('string <= 2048').or('null'),
    'scope?': type('string <= 2048').or('null'),
  }),
)

const Unrestricted = lazy(() => type({ '+': 'reject', type: "'unrestricted'" }))
const Limited = lazy(() => type({ '+': 'reject', type: "'limited'", allowed_hosts: listOf(AllowedHost, { min: 1, max: 16 }) }))
const CredentialNetworking = lazy(() => Unrestricted.or(Limited))
const InjectionLocation = lazy(() => type({ '+': 'reject', 'body?': 'boolean', 'header?': 'boolean' }).narrow(notArray))

export const McpOAuthCreate = lazy(() =>
  type({
    '+': 'reject',
    type: "'mcp_oauth'",
    mcp_server_url: Url,
    access_token: Secret,
    'expires_at?': Expiry,
    'refresh?': RefreshCreate.or('null'),
  }),
)
export const StaticBearerCreate = lazy(() => type({ '+': 'reject', type: "'static_bearer'", mcp_server_url: Url, token: Secret }))
export const EnvironmentVariableCreate = lazy(() =>
  type({
    '+': 'reject',
    type: "'environment_variable'",
    secret_name: SecretName,
    secret_value: Secret,
    networking: CredentialNetworking,
    'injection_location?': InjectionLocation,
  }),
)

const RefreshUpdate = lazy(() =>
  type({
    '+': 'reject',
    'refresh_token?': Secret.or('null'),
    // "" clears the stored scope (the official client's words).
    'scope?': type('string <= 2048').or('null'),
    'token_endpoint_auth?': type({ '+': 'reject', type: "'client_secret_basic' | 'client_secret_post'", 'client_secret?': Secret.or('null') }),
    'client_id?': immutable('client_id'),
    'token_endpoint?': immutable('token_endpoint'),
    'resource?': immutable('resource'),
  }).narrow(notArray),
)

export const McpOAuthUpdate = lazy(() =>
  type({
    '+': 'reject',
    type: "'mcp_oauth'",
    'access_token?': Secret.or('null'),
    'expires_at?': Expiry,
    'refresh?': RefreshUpdate.or('null'),
    'mcp_server_url?': immutable('mcp_server_url'),
  }),
)
export const StaticBearerUpdate = lazy(() =>
  type({ '+': 'reject', type: "'static_bearer'", 'token?': Secret.or('null'), 'mcp_server_url?': immutable('mcp_server_url') }),
)
export const EnvironmentVariableUpdate = lazy(() =>
  type({
    '+': 'reject',
    type: "'environment_variable'",
    'secret_value?': Secret.or('null'),
    'networking?': CredentialNetworking.or('null'),
    'injection_location?': InjectionLocation,
    'secret_name?': immutable('secret_name'),
  }),
)

export const CredentialCreate = lazy(() =>
  type({
    '+': 'reject',
    auth: type.or(McpOAuthCreate, StaticBearerCreate, EnvironmentVariableCreate),
    'display_name?': type('string <= 255').or('null'),
    'metadata?': Metadata,
  }),
)

export const CredentialUpdate = lazy(() =>
  type({
    '+': 'reject',
    'auth?': type.or(McpOAuthUpdate, StaticBearerUpdate, EnvironmentVariableUpdate),
    'display_name?': type('string <= 255').or('null'),
    'metadata?': MetadataPatch.or('null'),
  }).narrow(notArray),
)

export const CredentialListQuery = lazy(() => type({ 'include_archived?': boolParam, 'limit?': limitParam(100), 'page?': pageParam }))

export type VaultCreateInput = typeof VaultCreate.infer
export type VaultUpdateInput = typeof VaultUpdate.infer
export type VaultListInput = typeof VaultListQuery.infer
export type CredentialCreateInput = typeof CredentialCreate.infer
export type CredentialUpdateInput = typeof CredentialUpdate.infer
export type CredentialAuthCreate = CredentialCreateInput['auth']
export type CredentialAuthUpdate = NonNullable<CredentialUpdateInput['auth']>

// Resources as returned (the official client's BetaManagedAgentsVault, BetaManagedAgentsCredential).

export interface Vault {
  id: string
  type: 'vault'
  display_name: string
  metadata: Record<string, string>
  created_at: string
  updated_at: string
  archived_at: string | null
}

export type TokenEndpointAuth = { type: 'none' } | { type: 'client_secret_basic' } | { type: 'client_secret_post' }

export interface McpOAuthRefresh {
  client_id: string
  token_endpoint: string
  token_endpoint_auth: TokenEndpointAuth
  resource: string | null
  scope: string | null
}

export type CredentialAuth =
  | { type: 'mcp_oauth'; mcp_server_url: string; expires_at: string | null; refresh: McpOAuthRefresh | null }
  | { type: 'static_bearer'; mcp_server_url: string }
  | {
      type: 'environment_variable'
      secret_name: string
      injection_location: { body: boolean; header: boolean }
      networking: { type: 'unrestricted' } | { type: 'limited'; allowed_hosts: string[] }
    }

export interface Credential {
  id: string
  type: 'vault_credential'
  vault_id: string
  display_name: string | null
  metadata: Record<string, string>
  auth: CredentialAuth
  created_at: string
  updated_at: string
  archived_at: string | null
}

/** An HTTP answer a validation shows (WIRE §15): its body cut at 4 KiB, secrets in it replaced by `[redacted]`. */
export interface ValidationHttpResponse {
  status_code: number
  content_type: string
  body: string
  body_truncated: boolean
}

export interface CredentialValidation {
  type: 'vault_credential_validation'
  credential_id: string
  vault_id: string
  status: 'valid' | 'invalid' | 'unknown'
  has_refresh_token: boolean
  /** The MCP `initialize` request sent to the credential's server with its access token; null when none was sent. */
  mcp_probe: { method: string; http_response: ValidationHttpResponse | null } | null
  /** The refresh made at the token endpoint; null when none was needed. */
  refresh: { status: 'succeeded' | 'failed' | 'connect_error' | 'no_refresh_token'; http_response: ValidationHttpResponse | null } | null
  validated_at: string
}

/** Internal (sessions' MCP connections): which credential of a vault serves an MCP server URL. */
export const CredentialResolve = lazy(() =>
  type({
    '+': 'reject',
    mcp_server_url: 'string <= 4096',
    /** The `basis` of a token the server refused (401): refreshed unless the credential holds another already. */
    'stale?': 'string <= 64',
  }),
)

const SealedShape = lazy(() => type({ '+': 'reject', kid: '1 <= string <= 64', nonce: '1 <= string <= 64', ct: '1 <= string <= 100000' }))

/**
 * Internal (a vault's owner storing an OAuth refresh's new tokens, sealed, through whichever host owns the vault by
 * then): stored only where the credential still holds the access token (`access_basis`, its seal's nonce) and the
 * refresh token (`refresh_basis`) that were refreshed.
 */
export const CredentialRefreshed = lazy(() =>
  type({
    '+': 'reject',
    credential_id: '1 <= string <= 64',
    access_basis: '1 <= string <= 64',
    'refresh_basis?': '1 <= string <= 64',
    access_token: SealedShape,
    'refresh_token?': SealedShape,
    expires_at: type('string.date.iso').or('null'),
  }),
)

/** A credential as its vault stores it: shown fields, secrets sealed (an internal op's reply, never the API's). */
export interface StoredCredentialView {
  credential: Credential
  secrets: Partial<Record<'token' | 'access_token' | 'refresh_token' | 'client_secret' | 'secret_value', SealedSecret>>
}

/** A secret as sealed with the operator keyring (actors/kit/keyring.ts `Sealed`): opened only by the host using it. */
export interface SealedSecret {
  kid: string
  nonce: string
  ct: string
}

/**
 * What `credentials.resolve` answers: no credential of the vault matches (`credential_id: null`); or the matching one's
 * bearer token, sealed (`token`; its associated data `aad`), with `basis` naming that token (to say it was refused); or,
 * when its OAuth refresh failed, why (`failure`, no secret in it).
 */
export interface ResolvedCredential {
  credential_id: string | null
  token?: SealedSecret
  aad?: string
  basis?: string
  failure?: string
}
