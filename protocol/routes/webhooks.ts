import { WebhookKind } from '../ops/webhook.js'
import type { Route } from './types.js'

const ops = WebhookKind.ops
const W = '/v1/webhooks/{webhook_id}'

export const webhookRoutes: Route[] = [
  { method: 'POST', path: '/v1/webhooks', operationId: 'webhooks.create', summary: 'Create a webhook endpoint', op: ops.create, once: true },
  { method: 'GET', path: '/v1/webhooks', operationId: 'webhooks.list', summary: 'List webhook endpoints', op: ops.list },
  { method: 'GET', path: W, operationId: 'webhooks.retrieve', summary: 'Get a webhook endpoint', op: ops.get },
  { method: 'POST', path: W, operationId: 'webhooks.update', summary: 'Update a webhook endpoint', op: ops.update },
  { method: 'DELETE', path: W, operationId: 'webhooks.delete', summary: 'Delete a webhook endpoint', op: ops.delete },
  {
    method: 'POST',
    path: `${W}/regenerate_signing_secret`,
    operationId: 'webhooks.regenerateSigningSecret',
    summary: 'Replace the signing secret of a webhook endpoint',
    op: ops.regenerate_signing_secret,
  },
]
