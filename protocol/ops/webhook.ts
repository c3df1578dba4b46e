import type { Page } from '../page.js'
import { WebhookDisable, type WebhookEndpoint, WebhookCreate, type WebhookEndpointWithSecret, WebhookListQuery, WebhookUpdate } from '../schemas/webhook.js'
import { defineKind, returns } from './define.js'

/**
 * Webhook endpoints (SPEC "Webhook endpoint", "Webhooks"). Creates and lists go to any host (a create's state is its
 * fence; lists come from each host's projection); everything about one endpoint goes to the host owning its partition,
 * where it is a durable-state actor holding its signing secret sealed.
 */
export const WebhookKind = defineKind(
  'webhook',
  { param: 'webhook_id', prefix: 'whep', noun: 'Webhook endpoint' },
  {
    create: { placement: 'any', body: WebhookCreate, reply: returns<WebhookEndpointWithSecret>() },
    list: { placement: 'any', query: WebhookListQuery, reply: returns<Page<WebhookEndpoint>>() },
    get: { placement: 'owner', reply: returns<WebhookEndpoint>() },
    update: { placement: 'owner', body: WebhookUpdate, reply: returns<WebhookEndpoint>() },
    delete: { placement: 'owner', reply: returns<{ id: string; type: 'webhook_endpoint_deleted' }>() },
    regenerate_signing_secret: { placement: 'owner', reply: returns<{ signing_secret: string }>() },
    /** Internal (a delivery got a redirect or reached a non-public address): disabled by the service, saying why. */
    disable: { placement: 'owner', body: WebhookDisable, reply: returns<WebhookEndpoint>() },
  },
)
