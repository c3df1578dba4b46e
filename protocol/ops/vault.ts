import type { Page } from '../page.js'
import {
  type Credential,
  CredentialCreate,
  CredentialListQuery,
  CredentialRefreshed,
  CredentialResolve,
  CredentialUpdate,
  type CredentialValidation,
  type ResolvedCredential,
  type StoredCredentialView,
  type Vault,
  VaultCreate,
  VaultListQuery,
  VaultUpdate,
} from '../schemas/vault.js'
import { defineKind, type IdSpec, returns } from './define.js'

/** A credential, named beside its vault in the credentials routes (WIRE §15). */
const CredentialId: IdSpec = { param: 'credential_id', prefix: 'vcrd', noun: 'Credential' }

/**
 * Vaults and their credentials. Creates and lists of vaults go to any host (a create's state is its fence; lists come
 * from each host's projection); everything about one vault, its credentials included, goes to the host owning its
 * partition, where it is a durable-state actor whose state holds its credentials, their secrets sealed.
 */
export const VaultKind = defineKind(
  'vault',
  { param: 'vault_id', prefix: 'vlt', noun: 'Vault' },
  {
    create: { placement: 'any', body: VaultCreate, reply: returns<Vault>() },
    list: { placement: 'any', query: VaultListQuery, reply: returns<Page<Vault>>() },
    get: { placement: 'owner', reply: returns<Vault>() },
    update: { placement: 'owner', body: VaultUpdate, reply: returns<Vault>() },
    archive: { placement: 'owner', reply: returns<Vault>() },
    /** Deletes the vault and every credential in it. */
    delete: { placement: 'owner', reply: returns<{ id: string; type: 'vault_deleted' }>() },
    'credentials.create': { placement: 'owner', body: CredentialCreate, reply: returns<Credential>() },
    'credentials.list': { placement: 'owner', query: CredentialListQuery, reply: returns<Page<Credential>>() },
    'credentials.get': { placement: 'owner', sub: CredentialId, reply: returns<Credential>() },
    'credentials.update': { placement: 'owner', sub: CredentialId, body: CredentialUpdate, reply: returns<Credential>() },
    'credentials.archive': { placement: 'owner', sub: CredentialId, reply: returns<Credential>() },
    'credentials.delete': { placement: 'owner', sub: CredentialId, reply: returns<{ id: string; type: 'vault_credential_deleted' }>() },
    /** Probes the credential's MCP server with its access token, refreshing it when expired or refused (docs/ARCHITECTURE.md, "Vaults"). */
    'credentials.validate': { placement: 'owner', sub: CredentialId, reply: returns<CredentialValidation>() },
    /**
     * Internal (a session's MCP connection; no route): the vault's active credential for an MCP server URL, its token
     * sealed, refreshed first when expired or refused.
     */
    'credentials.resolve': { placement: 'owner', body: CredentialResolve, reply: returns<ResolvedCredential>() },
    /** Internal (the vault's owner after an OAuth refresh; no route): the new tokens stored, compared first. Null: gone. */
    'credentials.store_refreshed': { placement: 'owner', body: CredentialRefreshed, reply: returns<StoredCredentialView | null>() },
  },
)
