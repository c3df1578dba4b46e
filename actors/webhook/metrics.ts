import { CounterFamily, HistogramFamily, SECONDS_SLOW } from '../../metrics/index.js'

const deliveries = new CounterFamily(
  'troupe_webhook_deliveries_total',
  'Webhook delivery attempts that ended, by outcome (delivered; retrying: failed, to be tried again; failed: the last attempt failed; dropped: its endpoint disabled or deleted first; disabled: it disabled its endpoint)',
  ['outcome'],
)
const lag = new HistogramFamily(
  'troupe_webhook_delivery_lag_seconds',
  "Time from a delivery being queued (the event fanned out to its endpoint) to its attempt's end, by outcome",
  ['outcome'],
  SECONDS_SLOW,
)

export type DeliveryOutcome = 'delivered' | 'retrying' | 'failed' | 'dropped' | 'disabled'

/** An attempt ended; `queuedAtMs`: when its delivery message was stored (ms since the epoch). */
export function countDelivery(outcome: DeliveryOutcome, queuedAtMs: number): void {
  deliveries.child(outcome).inc()
  lag.child(outcome).observe(Math.max(0, Date.now() - queuedAtMs) / 1000)
}
