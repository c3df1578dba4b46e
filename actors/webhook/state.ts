import type { WebhookEndpoint, WebhookEventType } from '../../protocol/schemas/webhook.js'
import type { Sealed } from '../kit/index.js'

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
   * What it was subscribed to and when: while enabled, one interval per set of event types, [from, to (null while
   * open), types] in epoch ms. An event belongs to the endpoints subscribed to its type when it happened (SPEC
   * delivery rules 1 and 8), whatever they do after. (Intervals written before types were kept have none: the
   * endpoint's current types stand for them.)
   */
  enabled: Interval[]
}

export type Interval = [from: number, to: number | null, types?: WebhookEventType[]]

export const WEBHOOK_PREFIX = 'webhook.'

/** The associated data the signing secret is sealed with: a ciphertext copied into another endpoint does not open. */
export const secretAad = (endpointId: string) => `${endpointId}/signing_secret`

/** Whether the endpoint was subscribed to events of `type` at `at` (epoch ms). */
export function subscribedAt(s: Pick<WebhookState, 'enabled' | 'endpoint'>, type: string, at: number): boolean {
  return s.enabled.some(([from, to, types]) => from <= at && (to === null || at < to) && (types ?? s.endpoint.event_types).includes(type as WebhookEventType))
}

/** The intervals as they are after a change at `t` from `was` to `next` (status, event types). */
export function nextIntervals(enabled: Interval[], was: WebhookEndpoint, next: WebhookEndpoint, t: number, kept: number): Interval[] {
  const wasOn = was.status === 'enabled'
  const on = next.status === 'enabled'
  const retyped = JSON.stringify(was.event_types) !== JSON.stringify(next.event_types)
  let out = enabled
  if (wasOn && (!on || retyped)) out = out.map(([from, to, types]): Interval => [from, to ?? t, types])
  if (on && (!wasOn || retyped)) out = [...out, [t, null, next.event_types] as Interval].slice(-kept)
  return out
}
