import { DeploymentKind, DeploymentRunKind } from '../ops/deployment.js'
import type { Route } from './types.js'

const ops = DeploymentKind.ops
const runs = DeploymentRunKind.ops

export const deploymentRoutes: Route[] = [
  { method: 'POST', path: '/v1/deployments', operationId: 'deployments.create', summary: 'Create a deployment', op: ops.create, once: true },
  { method: 'GET', path: '/v1/deployments', operationId: 'deployments.list', summary: 'List deployments', op: ops.list },
  { method: 'GET', path: '/v1/deployments/{deployment_id}', operationId: 'deployments.retrieve', summary: 'Get a deployment', op: ops.get },
  { method: 'POST', path: '/v1/deployments/{deployment_id}', operationId: 'deployments.update', summary: 'Update a deployment', op: ops.update },
  { method: 'POST', path: '/v1/deployments/{deployment_id}/pause', operationId: 'deployments.pause', summary: 'Pause a deployment', op: ops.pause },
  { method: 'POST', path: '/v1/deployments/{deployment_id}/unpause', operationId: 'deployments.unpause', summary: 'Unpause a deployment', op: ops.unpause },
  { method: 'POST', path: '/v1/deployments/{deployment_id}/archive', operationId: 'deployments.archive', summary: 'Archive a deployment', op: ops.archive },
  // Each call stores a new run; without an Idempotency-Key a lost outcome is a 504 rather than a blind retry.
  { method: 'POST', path: '/v1/deployments/{deployment_id}/run', operationId: 'deployments.run', summary: 'Run a deployment now', op: ops.run, once: true },
  { method: 'GET', path: '/v1/deployment_runs/{deployment_run_id}', operationId: 'deployment_runs.retrieve', summary: 'Get a deployment run', op: runs.get },
  { method: 'GET', path: '/v1/deployment_runs', operationId: 'deployment_runs.list', summary: 'List deployment runs', op: runs.list },
]
