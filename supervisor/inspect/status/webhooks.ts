import { decode } from '../../../protocol/codec.js'
import { Buckets } from '../../../protocol/subjects.js'
import {
  DELIVERIES_CONSUMER,
  DELIVERIES_STREAM,
  DELIVERY_SUBJECTS,
  deliverySubject,
  type EndpointHealth,
  type Position,
  RECORDS_BUCKET,
  WEBHOOK_PREFIX,
  type WebhookState,
} from '../../../actors/webhook/index.js'
import type { Gaps, Reads } from './reads.js'
import { byCodePoint } from './text.js'

/** Endpoints listed one by one; the rest are counted. */
export const ENDPOINTS_SHOWN = 20

export interface EndpointView {
  id: string
  url: string
  status: 'enabled' | 'disabled'
  disabled_reason: string | null
  /** Deliveries queued for it and not yet delivered (or given up), in flight included. */
  backlog: number
  /** Its continuous-failure window: open since its first failed attempt after its last 2xx; null while delivering. */
  failing: { since: string; failures: number; last: string } | null
}

/** Where the fan-out (or its audit, a minute behind by design) of one source stream stands. */
export interface FanOutView {
  stream: string
  reading: 'source' | 'audit'
  /** Every message up to it is fanned out. */
  seq: number
  /** The stream's last message; null when the stream does not exist. */
  last_seq: number | null
  /** Messages stored and not yet fanned out: `last_seq - seq`. */
  lag: number | null
  /** The reader holding its lease (a reader's own id, one per source in each orchestrator), while the lease lasts. */
  holder: string | null
  lease: 'live' | 'lapsed' | 'none'
}

export interface WebhooksView {
  total: number
  enabled: number
  disabled: number
  /** Failing (an open failure window) first, then by backlog. */
  listed: EndpointView[]
  more: number
  /**
   * Deliveries stored in TROUPE_WEBHOOK_DELIVERIES (null without the stream), and those of them a worker claimed and
   * has not acknowledged: attempts in progress, and failed ones waiting for their retry (a nak with a delay stays claimed).
   */
  queued: number | null
  in_flight: number | null
  /** Endpoints with an open failure window. */
  failing: number
  fan_out: FanOutView[]
  gaps: Gaps
}

/**
 * From troupe_webhooks (endpoints), TROUPE_WEBHOOK_DELIVERIES (per-endpoint counts, its consumer), the `health.`
 * keys of troupe_webhook_deliveries, and troupe_webhook_fanout against each source stream's last sequence.
 */
export async function readWebhooks(reads: Reads, now: number): Promise<WebhooksView> {
  const [endpoints, queue, consumer, health, positions] = await Promise.all([
    reads.bucket(Buckets.webhooks, WEBHOOK_PREFIX),
    reads.stream(DELIVERIES_STREAM, DELIVERY_SUBJECTS),
    reads.consumer(DELIVERIES_STREAM, DELIVERIES_CONSUMER),
    reads.bucket(RECORDS_BUCKET, 'health.'),
    reads.bucket(Buckets.webhookFanOut),
  ])
  const view: WebhooksView = {
    total: 0,
    enabled: 0,
    disabled: 0,
    listed: [],
    more: 0,
    queued: queue ? queue.state.messages : null,
    in_flight: consumer ? consumer.num_ack_pending : null,
    failing: 0,
    fan_out: await fanOut(reads, positions?.values, now),
    gaps: reads.gaps,
  }
  const counts = queue?.state.subjects ?? {}
  const all: EndpointView[] = []
  for (const v of endpoints?.values.values() ?? []) {
    const { endpoint: e } = decode<WebhookState>(v)
    view.total++
    view[e.status]++
    const h = health?.values.get(`health.${e.id}`)
    const window = h ? decode<EndpointHealth>(h) : undefined
    if (window) view.failing++
    all.push({
      id: e.id,
      url: e.url,
      status: e.status,
      disabled_reason: e.disabled_reason,
      backlog: counts[deliverySubject(e.id)] ?? 0,
      failing: window ? { since: new Date(window.failing_since).toISOString(), failures: window.failures, last: window.last } : null,
    })
  }
  all.sort((a, b) => Number(!!b.failing) - Number(!!a.failing) || b.backlog - a.backlog || byCodePoint(b.id, a.id))
  view.listed = all.slice(0, ENDPOINTS_SHOWN)
  view.more = all.length - view.listed.length
  return view
}

/** Each position of the fan-out bucket (`source.<stream>`, `audit.<stream>`) against its stream's last message. */
async function fanOut(reads: Reads, positions: Map<string, Uint8Array> | undefined, now: number): Promise<FanOutView[]> {
  const entries = [...(positions ?? [])].flatMap(([key, v]) => {
    const dot = key.indexOf('.')
    const reading = key.slice(0, dot)
    return reading === 'source' || reading === 'audit' ? ([{ reading, stream: key.slice(dot + 1), p: decode<Position>(v) }] as const) : []
  })
  const streams = [...new Set(entries.map((e) => e.stream))]
  const last = new Map(await Promise.all(streams.map(async (s) => [s, (await reads.stream(s))?.state.last_seq ?? null] as const)))
  return entries
    .map(({ reading, stream, p }) => {
      const lastSeq = last.get(stream) ?? null
      return {
        stream,
        reading,
        seq: p.seq,
        last_seq: lastSeq,
        lag: lastSeq === null ? null : Math.max(0, lastSeq - p.seq),
        holder: p.holder && p.until > now ? p.holder : null,
        lease: !p.holder ? 'none' : p.until > now ? 'live' : 'lapsed',
      } satisfies FanOutView
    })
    .sort((a, b) => Number(a.reading === 'audit') - Number(b.reading === 'audit') || byCodePoint(a.stream, b.stream))
}
