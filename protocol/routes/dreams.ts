import { DreamKind } from '../ops/dream.js'
import type { Route } from './types.js'

const ops = DreamKind.ops
const D = '/v1/dreams/{dream_id}'
// The official client sends `dreaming-2026-04-21` on these.
const beta = 'dreams' as const

export const dreamRoutes: Route[] = [
  { method: 'POST', path: '/v1/dreams', operationId: 'dreams.create', summary: 'Create a dream', op: ops.create, once: true, beta },
  { method: 'GET', path: '/v1/dreams', operationId: 'dreams.list', summary: 'List dreams', op: ops.list, beta },
  { method: 'GET', path: D, operationId: 'dreams.retrieve', summary: 'Get a dream', op: ops.get, beta },
  { method: 'POST', path: `${D}/archive`, operationId: 'dreams.archive', summary: 'Archive an ended dream', op: ops.archive, beta },
  { method: 'POST', path: `${D}/cancel`, operationId: 'dreams.cancel', summary: 'Cancel a pending or running dream', op: ops.cancel, beta },
]
