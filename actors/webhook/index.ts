import { fail } from '../../protocol/errors/fail.js'
import { WebhookKind } from '../../protocol/ops/webhook.js'
import { Buckets } from '../../protocol/subjects.js'
import { listedKind } from '../kit/index.js'
import { webhookOps } from './behaviour.js'
import { ensureFanOutPositions, openPositions } from './fanout.js'
import { WEBHOOK_PREFIX, type WebhookState } from './state.js'

/**
 * Webhook endpoints (kit/listed-kind.ts), their signing secrets sealed by the operator keyring
 * (`HostSettings.keyring`); without a keyring every op answers 422. The orchestrating roles fan lifecycle events out
 * to endpoints and deliver them (orchestrate.ts).
 */
export const webhookKind = listedKind({
  contract: WebhookKind,
  bucket: Buckets.webhooks,
  missing: (id) => fail('webhook_not_found', id),
  prefix: WEBHOOK_PREFIX,
  view: (s: WebhookState) => s.endpoint,
  async ops(ctx, states, projection) {
    // Lifecycle events are fanned out from the moment webhooks are configured, whether or not an orchestrator runs yet.
    if (ctx.settings.keyring) await ensureFanOutPositions(ctx.storage, await openPositions(ctx.kvm, ctx.storage))
    return webhookOps({ states, projection, keyring: ctx.settings.keyring, keyringConflict: ctx.keyringConflict })
  },
})

// The orchestrating roles' fan-out and delivery of webhook events.
export { type DeliveriesOptions, startDeliveries } from './orchestrate.js'

// What `troupe status` reads of webhooks where they are stored: endpoints, their queued deliveries and failure windows,
// and where the fan-out of each source stands.
export { WEBHOOK_PREFIX, type WebhookState } from './state.js'
export {
  DELIVERIES_CONSUMER,
  DELIVERIES_STREAM,
  DELIVERY_SUBJECTS,
  deliverySubject,
  type EndpointHealth,
  healthKey,
  RECORDS_BUCKET,
} from './deliveries.js'
export type { Position } from './source-reader.js'
