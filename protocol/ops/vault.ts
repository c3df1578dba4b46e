import type { Page } from '../page.js'
import {
  type Credential,
  CredentialCreate,
  CredentialListQuery,
  CredentialUpdate,
  type CredentialValidation,
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
    /** No probe is made (sessions use no credential for MCP yet): the verdict is `unknown`, with whether a refresh token is stored. */
    'credentials.validate': { placement: 'owner', sub: CredentialId, reply: returns<CredentialValidation>() },
  },
)
