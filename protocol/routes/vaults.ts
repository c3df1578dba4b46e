import { VaultKind } from '../ops/vault.js'
import type { Route } from './types.js'

const ops = VaultKind.ops
const V = '/v1/vaults/{vault_id}'
const C = `${V}/credentials/{credential_id}`

export const vaultRoutes: Route[] = [
  { method: 'POST', path: '/v1/vaults', operationId: 'vaults.create', summary: 'Create a vault', op: ops.create, once: true },
  { method: 'GET', path: '/v1/vaults', operationId: 'vaults.list', summary: 'List vaults', op: ops.list },
  { method: 'GET', path: V, operationId: 'vaults.retrieve', summary: 'Get a vault', op: ops.get },
  { method: 'POST', path: V, operationId: 'vaults.update', summary: 'Update a vault', op: ops.update },
  { method: 'DELETE', path: V, operationId: 'vaults.delete', summary: 'Delete a vault and its credentials', op: ops.delete },
  { method: 'POST', path: `${V}/archive`, operationId: 'vaults.archive', summary: 'Archive a vault and its credentials', op: ops.archive },
  {
    method: 'POST',
    path: `${V}/credentials`,
    operationId: 'vaults.credentials.create',
    summary: 'Add a credential to a vault',
    op: ops['credentials.create'],
    once: true,
  },
  { method: 'GET', path: `${V}/credentials`, operationId: 'vaults.credentials.list', summary: 'List the credentials of a vault', op: ops['credentials.list'] },
  { method: 'GET', path: C, operationId: 'vaults.credentials.retrieve', summary: 'Get a credential', op: ops['credentials.get'] },
  { method: 'POST', path: C, operationId: 'vaults.credentials.update', summary: 'Update a credential', op: ops['credentials.update'] },
  { method: 'DELETE', path: C, operationId: 'vaults.credentials.delete', summary: 'Delete a credential', op: ops['credentials.delete'] },
  { method: 'POST', path: `${C}/archive`, operationId: 'vaults.credentials.archive', summary: 'Archive a credential', op: ops['credentials.archive'] },
  {
    method: 'POST',
    path: `${C}/mcp_oauth_validate`,
    operationId: 'vaults.credentials.mcpOAuthValidate',
    summary: 'Validate an MCP OAuth credential (no probe is made: the verdict is unknown)',
    op: ops['credentials.validate'],
  },
]
