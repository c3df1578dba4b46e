import { WorkKind } from '../ops/work.js'
import type { Route } from './types.js'

const ops = WorkKind.ops
const Q = '/v1/environments/{environment_id}/work'
const W = `${Q}/{work_id}`

/** The self-hosted work queue (WIRE §5); `Anthropic-Worker-ID` reaches the poll (`headers`). */
export const workRoutes: Route[] = [
  {
    method: 'GET',
    path: `${Q}/poll`,
    operationId: 'environments.work.poll',
    summary: 'Long-poll for a work item',
    op: ops.poll,
    headers: ['anthropic-worker-id'],
  },
  { method: 'GET', path: `${Q}/stats`, operationId: 'environments.work.stats', summary: 'Statistics of the work queue', op: ops.stats },
  { method: 'GET', path: Q, operationId: 'environments.work.list', summary: 'List work items', op: ops.list },
  { method: 'GET', path: W, operationId: 'environments.work.retrieve', summary: 'Get a work item', op: ops.get },
  { method: 'POST', path: W, operationId: 'environments.work.update', summary: "Update a work item's metadata", op: ops.update },
  { method: 'POST', path: `${W}/ack`, operationId: 'environments.work.ack', summary: 'Acknowledge a work item', op: ops.ack },
  { method: 'POST', path: `${W}/heartbeat`, operationId: 'environments.work.heartbeat', summary: "Renew a work item's lease", op: ops.heartbeat },
  { method: 'POST', path: `${W}/stop`, operationId: 'environments.work.stop', summary: 'Stop a work item', op: ops.stop },
]
