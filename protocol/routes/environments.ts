import { EnvironmentKind } from '../ops/environment.js'
import type { Route } from './types.js'

const ops = EnvironmentKind.ops

export const environmentRoutes: Route[] = [
  { method: 'POST', path: '/v1/environments', operationId: 'environments.create', summary: 'Create an environment', op: ops.create, once: true },
  { method: 'GET', path: '/v1/environments', operationId: 'environments.list', summary: 'List environments', op: ops.list },
  { method: 'GET', path: '/v1/environments/{environment_id}', operationId: 'environments.retrieve', summary: 'Get an environment', op: ops.get },
  { method: 'POST', path: '/v1/environments/{environment_id}', operationId: 'environments.update', summary: 'Update an environment', op: ops.update },
  {
    method: 'POST',
    path: '/v1/environments/{environment_id}/archive',
    operationId: 'environments.archive',
    summary: 'Archive an environment',
    op: ops.archive,
  },
  { method: 'DELETE', path: '/v1/environments/{environment_id}', operationId: 'environments.delete', summary: 'Delete an environment', op: ops.delete },
]
