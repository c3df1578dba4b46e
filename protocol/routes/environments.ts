import { EnvironmentCreate, EnvironmentListQuery, EnvironmentUpdate } from '../schemas/environment.js'
import type { Route } from './types.js'

const env = (op: string) => ({ kind: 'environment' as const, op })

export const environmentRoutes: Route[] = [
  { method: 'POST', path: '/v1/environments', operationId: 'environments.create', summary: 'Create an environment', target: env('create'), body: EnvironmentCreate, once: true },
  { method: 'GET', path: '/v1/environments', operationId: 'environments.list', summary: 'List environments', target: env('list'), query: EnvironmentListQuery },
  { method: 'GET', path: '/v1/environments/{environment_id}', operationId: 'environments.retrieve', summary: 'Get an environment', target: env('get') },
  { method: 'POST', path: '/v1/environments/{environment_id}', operationId: 'environments.update', summary: 'Update an environment', target: env('update'), body: EnvironmentUpdate },
  { method: 'POST', path: '/v1/environments/{environment_id}/archive', operationId: 'environments.archive', summary: 'Archive an environment', target: env('archive') },
  { method: 'DELETE', path: '/v1/environments/{environment_id}', operationId: 'environments.delete', summary: 'Delete an environment', target: env('delete') },
]
