import { AckPolicy, DeliverPolicy, type JetStreamClient, JetStreamApiError, type JetStreamManager, type JsMsg, RetentionPolicy } from '@nats-io/jetstream'
import type { KV, KvEntry } from '@nats-io/kv'
import { headers as natsHeaders } from '@nats-io/nats-core'
import type { Logger } from 'pino'
import { decode, encode } from '../../protocol/codec.js'
import { isId } from '../../protocol/ids.js'
import {
  ensureConsumer,
  ensureStream,
  jitteredAfter,
  type Keyring,
  readAtLeader,
  retryWhileStarting,
  type Storage,
  WEBHOOK_PAUSE_MS,
  webhookRetry,
} from '../kit/index.js'
import { OrphanSweeper, REQUEUED_HEADER } from './orphans.js'
import { type Outcome, post, type PostOptions } from './post.js'
import { attemptHeaders } from './signature.js'
import { countDelivery } from './metrics.js'
import { secretAad, WEBHOOK_PREFIX, type WebhookState } from './state.js'

/**
 * Deliveries waiting for their attempts: one message per (event, subscribed endpoint), the event's exact bytes, on
 * `troupe.webhook.delivery.<endpoint id>`, deduplicated by `<event id>.<endpoint id>`; a work queue, so a message
 * goes once it is acknowledged or terminated, and one whose worker died comes back after the ack wait.
 */
export const DELIVERIES_STREAM = 'TROUPE_WEBHOOK_DELIVERIES'
const SUBJECT_PREFIX = 'troupe.webhook.delivery'
/** Every endpoint's deliveries. */
export const DELIVERY_SUBJECTS = `${SUBJECT_PREFIX}.>`
/** The one consumer every orchestrator pulls from: deliveries are shared, each attempt claimed by one. */
export const DELIVERIES_CONSUMER = 'deliveries'
/**
 * A delivery claimed and not answered for this long is handed to another worker (its worker died): a live worker says
 * every WORKING_EVERY_MS that its attempt is in progress.
 */
export const ACK_WAIT_MS = 10_000
const WORKING_EVERY_MS = 3_000
/** How long one claim waits for deliveries to arrive before it asks again. */
const FETCH_EXPIRES_MS = 5_000
/** The header naming a delivery's event (`whe_…`): the `webhook-id` of every attempt. */
export const EVENT_HEADER = 'Troupe-Webhook-Event'
/** Terminal delivery records: kept 30 days (SPEC delivery rule 7), then removed by the server (the bucket's max age). */
export const RECORDS_BUCKET = 'troupe_webhook_deliveries'
export const RECORD_MAX_AGE_MS = 30 * 24 * 3600_000

export function deliverySubject(endpoint: string): string {
  if (!isId('whep', endpoint)) throw new Error(`not an endpoint id: ${JSON.stringify(endpoint)}`)
  return `${SUBJECT_PREFIX}.${endpoint}`
}

export async function ensureDeliveriesStream(storage: Storage): Promise<void> {
  await ensureStream(storage, 'webhook deliveries stream', {
    name: DELIVERIES_STREAM,
    subjects: [DELIVERY_SUBJECTS],
    retention: RetentionPolicy.Workqueue,
    duplicate_window: 120_000_000_000,
  })
}

/**
 * Queues the delivery of `event` (its exact bytes) to `endpoint`; a repeat within two minutes is stored once. `again`
 * names a queuing of its own (the audit's), not deduplicated against the first.
 */
export async function enqueueDelivery(js: JetStreamClient, endpoint: string, event: string, bytes: Uint8Array, again?: string): Promise<void> {
  const h = natsHeaders()
  h.set(EVENT_HEADER, event)
  await js.publish(deliverySubject(endpoint), bytes, { msgID: `${event}.${endpoint}${again ? `.${again}` : ''}`, headers: h })
}

/** When the oldest delivery still queued for `endpoint` was queued (epoch ms); undefined when none is. */
export async function oldestQueued(jsm: JetStreamManager, endpoint: string): Promise<number | undefined> {
  const m = await jsm.streams
    .getMessage(DELIVERIES_STREAM, { seq: 0, next_by_subj: deliverySubject(endpoint) } as unknown as { seq: number })
    .catch((err: unknown) => {
      if (err instanceof JetStreamApiError && err.code === NO_MESSAGE_FOUND) return null
      throw err
    })
  return m ? m.time.getTime() : undefined
}
/** JSNoMessageFoundErr. */
const NO_MESSAGE_FOUND = 10037

/** How a delivery ended, kept RECORD_MAX_AGE_MS under `<endpoint id>.<event id>`. */
export interface DeliveryRecord {
  endpoint: string
  event: string
  /** delivered: a 2xx; failed: its attempts ran out; dropped: its endpoint was disabled or deleted first; disabled: it disabled its endpoint. */
  result: 'delivered' | 'failed' | 'dropped' | 'disabled'
  attempts: number
  /** The last attempt's HTTP status or why it failed. */
  last: string
  at: number
  /** The event's exact bytes as delivered (SPEC delivery rule 7: records and payloads kept 30 days). */
  payload: string
}

export interface DeliveryWorkerOptions {
  js: JetStreamClient
  /** `troupe_webhooks`: endpoints are read as they are when an attempt is claimed (a rotated secret applies from then). */
  endpoints: KV
  /** `RECORDS_BUCKET`, opened with max age RECORD_MAX_AGE_MS. */
  records: KV
  keyring: Keyring
  /** Disables an endpoint, saying why (a redirect, a non-public address): the endpoint's owner writes it. */
  disable(endpoint: string, reason: string): Promise<void>
  post: Omit<PostOptions, 'timeoutMs'> & { timeoutMs?: number }
  log: Logger
  /** Attempts in flight at once. Default 32. */
  concurrency?: number
  /** Attempts in flight to one endpoint: a slow receiver holds only these. Default 4. */
  perEndpoint?: number
  /**
   * The pause after the n-th failed attempt: `jitteredAfter(webhookRetry, n, WEBHOOK_PAUSE_MS)` (5–120 s). Tests pass
   * one that records it and waits less.
   */
  pauseAfter?: (failures: number) => number
}

/** An endpoint failing since its last 2xx: `health.<endpoint id>` in the records bucket. */
export interface EndpointHealth {
  /** When the first failure of the window was (epoch ms). */
  failing_since: number
  failures: number
  /** The last failure's HTTP status or why it failed. */
  last: string
}
export const healthKey = (endpoint: string) => `health.${endpoint}`

/**
 * A delivery still pending, in the records bucket: how many of its attempts failed. Counted here, not from the server's
 * delivery count, which also counts claims that made no attempt (a worker killed mid-attempt, a claim lost in a NATS
 * fault, a busy endpoint).
 */
interface Pending {
  failures: number
}

const defaultPause = (failures: number) => jitteredAfter(webhookRetry, failures, WEBHOOK_PAUSE_MS)

/** An attempt takes at most this long, connecting and answering included. */
const ATTEMPT_TIMEOUT_MS = 15_000
/** A delivery whose endpoint already has `perEndpoint` attempts in flight comes back after this. */
const BUSY_DELAY_MS = 1000
/** A delivery this process's keyring cannot open waits this long before it is offered again. */
const UNOPENABLE_DELAY_MS = 5000

/**
 * Attempts deliveries (the `orchestrate` role): claims each from the shared consumer, reads its endpoint, signs afresh
 * and POSTs (post.ts). A 2xx acknowledges; a failure comes back after a jittered pause (5–120 s) until 3 attempts,
 * then is dropped; a redirect or a non-public address disables the endpoint and ends the delivery; a delivery whose
 * endpoint is disabled or gone by the time it is claimed ends without an attempt (so disabling fails what is pending).
 */
export class DeliveryWorker {
  private readonly inFlight = new Map<string, number>()
  /** Endpoints whose secret this keyring could not open, said once each (until one opens again). */
  private readonly unopenable = new Set<string>()
  private running = 0
  /** Waiting for an attempt to end so the next may start (at most `concurrency` run). */
  private freed: (() => void) | undefined
  private stopped = false
  /** The claim in progress, stopped with the worker. */
  private batch?: { stop(): void }
  private loop: Promise<void> = Promise.resolve()
  private readonly settled = new Set<Promise<void>>()
  private sweeper: OrphanSweeper | undefined

  constructor(private readonly o: DeliveryWorkerOptions) {}

  async start(storage: Storage): Promise<void> {
    // Right after a server (re)starts or a cluster forms, JetStream refuses calls for a moment: waited out.
    const consumer = await retryWhileStarting('webhook deliveries consumer', async () => {
      await ensureDeliveriesStream(storage)
      await ensureConsumer(storage, DELIVERIES_STREAM, {
        durable_name: DELIVERIES_CONSUMER,
        ack_policy: AckPolicy.Explicit,
        deliver_policy: DeliverPolicy.All,
        ack_wait: ACK_WAIT_MS * 1_000_000,
        max_ack_pending: 10_000,
      })
      return this.o.js.consumers.get(DELIVERIES_STREAM, DELIVERIES_CONSUMER)
    })
    this.sweeper = new OrphanSweeper({
      js: this.o.js,
      jsm: storage.jsm,
      queue: { stream: DELIVERIES_STREAM, consumer: DELIVERIES_CONSUMER, subjects: DELIVERY_SUBJECTS, eventHeader: EVENT_HEADER },
      log: this.o.log,
    })
    this.sweeper.start()
    const concurrency = this.o.concurrency ?? 32
    this.loop = (async () => {
      while (!this.stopped) {
        while (this.running >= concurrency && !this.stopped) await new Promise<void>((r) => (this.freed = r))
        if (this.stopped) break
        try {
          // Claimed only as attempts can start: a claim waiting its turn here would run down its ack wait.
          const batch = await consumer.fetch({ max_messages: concurrency - this.running, expires: FETCH_EXPIRES_MS })
          this.batch = batch
          for await (const m of batch) {
            if (this.stopped) m.nak()
            else this.begin(m)
          }
        } catch (err) {
          this.o.log.warn({ err }, 'webhook deliveries could not be claimed for a moment')
          await new Promise((r) => setTimeout(r, 1000))
        }
      }
    })()
  }

  /** Runs one attempt, telling the server it is in progress while it runs (a dead worker's claim lapses quickly). */
  private begin(m: JsMsg): void {
    this.running++
    const working = setInterval(() => m.working(), WORKING_EVERY_MS)
    const p = this.attempt(m)
      .catch((err) => {
        this.o.log.error({ err, subject: m.subject }, 'webhook delivery failed unexpectedly; it comes back after the ack wait')
      })
      .finally(() => {
        clearInterval(working)
        this.running--
        this.settled.delete(p)
        this.freed?.()
        this.freed = undefined
      })
    this.settled.add(p)
  }

  async stop(): Promise<void> {
    this.stopped = true
    this.batch?.stop()
    this.freed?.()
    await Promise.all([this.loop, this.sweeper?.stop()])
    // Attempts in flight finish (each is bounded); what they do not settle comes back to another worker.
    await Promise.all([...this.settled])
  }

  private async attempt(m: JsMsg): Promise<void> {
    const endpoint = m.subject.slice(SUBJECT_PREFIX.length + 1)
    const event = m.headers?.get(EVENT_HEADER) ?? ''
    if (!isId('whep', endpoint) || !isId('whe', event)) {
      m.term()
      return this.o.log.warn({ subject: m.subject, event }, 'a delivery that names no endpoint or event is dropped')
    }
    const key = `${endpoint}.${event}`
    // Failed attempts so far: none on a first claim (of a message not queued again by the sweeper).
    const failed = m.info.deliveryCount > 1 || m.headers?.has(REQUEUED_HEADER) ? ((await this.pending(key))?.failures ?? 0) : 0
    const n = failed + 1
    const body = new TextDecoder().decode(m.data)
    const queuedAt = m.info.timestampNanos / 1e6
    const record = (result: DeliveryRecord['result'], last: string, attempts = n) => {
      countDelivery(result, queuedAt)
      return this.record({ endpoint, event, result, attempts, last, at: Date.now(), payload: body })
    }
    const read = (e: KvEntry | null) => (e?.operation === 'PUT' ? decode<WebhookState>(e.value) : undefined)
    let state = read(await this.o.endpoints.get(`${WEBHOOK_PREFIX}${endpoint}`))
    // Ending a delivery is read where the endpoint's last write surely is: any replica answers a get, and one that is
    // catching up after a NATS fault can miss an endpoint or hold an older state of it.
    if (state?.endpoint.status !== 'enabled') state = read(await readAtLeader(this.o.endpoints, `${WEBHOOK_PREFIX}${endpoint}`))
    if (state?.endpoint.status !== 'enabled') {
      m.term()
      return record('dropped', state ? 'endpoint disabled' : 'endpoint deleted', failed)
    }
    const held = this.inFlight.get(endpoint) ?? 0
    if (held >= (this.o.perEndpoint ?? 4)) {
      // Its endpoint has its share of attempts in flight here: back to the queue for a moment, without an attempt.
      m.nak(BUSY_DELAY_MS)
      return
    }
    // A secret this process's keyring cannot open (the cluster's keyrings differ): no attempt is made or counted, and
    // the delivery goes back for a process whose keyring holds the key.
    let secret: string
    try {
      secret = this.o.keyring.open(state.secret, secretAad(endpoint))
    } catch (err) {
      if (!this.unopenable.has(endpoint)) {
        this.unopenable.add(endpoint)
        this.o.log.error(
          { endpoint, key: state.secret.kid, err: (err as Error).message },
          `keyring_mismatch: this process cannot open the signing secret of webhook endpoint ${endpoint} (sealed with key ${state.secret.kid}): the cluster's keyrings differ; its deliveries are left to a process whose keyring holds that key`,
        )
      }
      m.nak(UNOPENABLE_DELAY_MS)
      return
    }
    this.unopenable.delete(endpoint)
    this.inFlight.set(endpoint, held + 1)
    let outcome: Outcome
    try {
      outcome = await post(state.endpoint.url, m.data, attemptHeaders(secret, event, body), { timeoutMs: ATTEMPT_TIMEOUT_MS, ...this.o.post })
    } finally {
      const left = (this.inFlight.get(endpoint) ?? 1) - 1
      if (left) this.inFlight.set(endpoint, left)
      else this.inFlight.delete(endpoint)
    }
    if (outcome.kind === 'delivered') {
      m.ack()
      await this.recovered(endpoint)
      return record('delivered', `HTTP ${outcome.status}`)
    }
    if (outcome.kind === 'redirected' || outcome.kind === 'refused') {
      const reason = outcome.kind === 'redirected' ? `the endpoint answered a redirect (HTTP ${outcome.status})` : outcome.why
      await this.o.disable(endpoint, reason)
      m.term()
      this.o.log.warn({ endpoint, event, reason }, 'webhook endpoint disabled')
      return record('disabled', reason)
    }
    await this.failing(endpoint, outcome.why)
    if (n >= webhookRetry.maximumAttempts) {
      m.term()
      this.o.log.warn({ endpoint, event, attempts: n, why: outcome.why }, 'webhook delivery dropped after its last attempt')
      return record('failed', outcome.why)
    }
    // Counted before it is put back: the next claim reads it (a count not written only allows one more attempt).
    await this.o.records
      .put(key, encode({ failures: n } satisfies Pending))
      .catch((err) => this.o.log.warn({ err, endpoint }, 'failed webhook attempt not counted'))
    countDelivery('retrying', queuedAt)
    m.nak((this.o.pauseAfter ?? defaultPause)(n))
  }

  /**
   * The endpoint's continuous-failure window (SPEC delivery rule 5), under `health.<endpoint id>` in the records bucket:
   * opened by a failed attempt, counted on, closed by the next 2xx. Nothing disables an endpoint for its length; its
   * opening and closing are logged, for the operator.
   */
  private async failing(endpoint: string, why: string): Promise<void> {
    try {
      const e = await this.o.records.get(healthKey(endpoint))
      const h = e?.operation === 'PUT' ? decode<EndpointHealth>(e.value) : undefined
      if (!h) this.o.log.warn({ endpoint, why }, 'webhook endpoint failing')
      const next: EndpointHealth = { failing_since: h?.failing_since ?? Date.now(), failures: (h?.failures ?? 0) + 1, last: why }
      await this.o.records.put(healthKey(endpoint), encode(next))
    } catch (err) {
      this.o.log.warn({ err, endpoint }, 'webhook endpoint health not recorded')
    }
  }

  private async recovered(endpoint: string): Promise<void> {
    try {
      const e = await this.o.records.get(healthKey(endpoint))
      if (e?.operation !== 'PUT') return
      const h = decode<EndpointHealth>(e.value)
      await this.o.records.delete(healthKey(endpoint))
      this.o.log.info({ endpoint, failures: h.failures, since: new Date(h.failing_since).toISOString() }, 'webhook endpoint delivering again')
    } catch (err) {
      this.o.log.warn({ err, endpoint }, 'webhook endpoint health not recorded')
    }
  }

  private async pending(key: string): Promise<Pending | undefined> {
    const e = await this.o.records.get(key)
    const v = e?.operation === 'PUT' ? decode<Pending | DeliveryRecord>(e.value) : undefined
    return v && 'failures' in v ? v : undefined
  }

  private async record(r: DeliveryRecord): Promise<void> {
    await this.o.records
      .put(`${r.endpoint}.${r.event}`, encode(r))
      .catch((err) => this.o.log.warn({ err, endpoint: r.endpoint }, 'delivery record not written'))
  }
}
