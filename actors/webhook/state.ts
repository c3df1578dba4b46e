import type { WebhookEndpoint } from '../../protocol/schemas/webhook.js'
import type { Sealed } from '../kit/keyring.js'

/**
 * How endpoints sit in their bucket:
 *
 *   troupe_webhooks  webhook.<id>  the endpoint's state (below), written only by the owner of its partition, fenced by
 *                                  its revision; a create (any host) is the one write that makes it, a delete removes it.
 *
 * The signing secret is sealed with the operator keyring, bound to the endpoint's id, and shown only by create and
 * regenerate.
 */
export interface WebhookState {
  endpoint: WebhookEndpoint
  /** Fingerprint of the create request, when it carried an Idempotency-Key: its retries must match it. */
  created_by?: string
  secret: Sealed
  /**
   * When it was enabled, as [from, to] epoch ms pairs (to null while it is): an event belongs to the endpoints enabled
   * when it happened (SPEC delivery rules 1 and 8), whatever they do after.
   */
  enabled: Array<[number, number | null]>
}

export const WEBHOOK_PREFIX = 'webhook.'

/** The associated data the signing secret is sealed with: a ciphertext copied into another endpoint does not open. */
export const secretAad = (endpointId: string) => `${endpointId}/signing_secret`

/** Whether the endpoint was enabled at `at` (epoch ms). */
export function enabledAt(s: Pick<WebhookState, 'enabled'>, at: number): boolean {
  return s.enabled.some(([from, to]) => from <= at && (to === null || at < to))
}
