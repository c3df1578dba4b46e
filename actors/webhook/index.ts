import { fail } from '../../protocol/errors/fail.js'
import { WebhookKind } from '../../protocol/ops/webhook.js'
import type { WebhookEndpoint } from '../../protocol/schemas/webhook.js'
import { Buckets } from '../../protocol/subjects.js'
import { durableState } from '../kit/durable-state.js'
import { implement } from '../kit/ops.js'
import { Projection } from '../kit/projection.js'
import type { ActorKindDef } from '../kit/types.js'
import { webhookOps } from './behaviour.js'
import { ensureFanOutConsumers } from './fanout.js'
import { WEBHOOK_PREFIX, type WebhookState } from './state.js'

/**
 * Webhook endpoints. Each is a durable-state actor (kit/durable-state.ts) on the host owning its partition, its signing
 * secret sealed by the operator keyring (`HostSettings.keyring`); creates and lists run on any host. Without a keyring
 * every op answers 422. The orchestrating roles fan lifecycle events out to endpoints and deliver them (orchestrate.ts).
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
    // Lifecycle events are fanned out from the moment webhooks are configured, whether or not an orchestrator runs yet.
    if (ctx.settings.keyring) await ensureFanOutConsumers(ctx.storage)
    const ops = webhookOps({ states, projection, keyring: ctx.settings.keyring })
    return states.runtime(implement(WebhookKind, ops), () => projection.stop())
  },
}
