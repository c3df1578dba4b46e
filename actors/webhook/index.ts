import { fail } from '../../protocol/errors/fail.js'
import { WebhookKind } from '../../protocol/ops/webhook.js'
import type { WebhookEndpoint } from '../../protocol/schemas/webhook.js'
import { Buckets } from '../../protocol/subjects.js'
import { durableState } from '../kit/durable-state.js'
import { implement } from '../kit/ops.js'
import { Projection } from '../kit/projection.js'
import type { ActorKindDef } from '../kit/types.js'
import { webhookOps } from './behaviour.js'
import { WEBHOOK_PREFIX, type WebhookState } from './state.js'

/**
 * Webhook endpoints. Each is a durable-state actor (kit/durable-state.ts) on the host owning its partition, its signing
 * secret sealed by the operator keyring (`HostSettings.keyring`); creates and lists run on any host. Without a keyring
 * every op answers 422. Deliveries (the orchestrate role) read endpoints from the bucket; they are not built yet.
 */
export const webhookKind: ActorKindDef = {
  contract: WebhookKind,
  async start(ctx) {
    const states = await durableState<WebhookState, typeof WebhookKind>(ctx, {
      contract: WebhookKind,
      bucket: Buckets.webhooks,
      missing: (id) => fail('webhook_not_found', id),
    })
    const projection = new Projection<WebhookEndpoint, WebhookState>(states.kv, WEBHOOK_PREFIX, (s) => s.endpoint)
    await projection.start()
    const ops = webhookOps({ states, projection, keyring: ctx.settings.keyring })
    return states.runtime(implement(WebhookKind, ops), () => projection.stop())
  },
}
