import { ApiKeyKind } from '../ops/api-key.js'
import type { Route } from './types.js'

const ops = ApiKeyKind.ops
const K = '/v1/admin/api_keys/{api_key_id}'
const admin = { beta: 'admin', admin: true } as const

/** The operator's routes: API keys (README "API keys"), each reached only with a key of scope `admin`. */
export const adminRoutes: Route[] = [
  { method: 'POST', path: '/v1/admin/api_keys', operationId: 'admin.apiKeys.create', summary: 'Create an API key', op: ops.create, ...admin },
  { method: 'GET', path: '/v1/admin/api_keys', operationId: 'admin.apiKeys.list', summary: 'List API keys', op: ops.list, ...admin },
  { method: 'GET', path: K, operationId: 'admin.apiKeys.retrieve', summary: 'Get an API key', op: ops.get, ...admin },
  { method: 'POST', path: K, operationId: 'admin.apiKeys.update', summary: "Update an API key's name, expiry or limits", op: ops.update, ...admin },
  { method: 'POST', path: `${K}/rotate`, operationId: 'admin.apiKeys.rotate', summary: "Replace an API key's secret", op: ops.rotate, ...admin },
  { method: 'POST', path: `${K}/revoke`, operationId: 'admin.apiKeys.revoke', summary: 'Revoke an API key', op: ops.revoke, ...admin },
]
