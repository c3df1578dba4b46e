// Webhooks under chaos (issue 26): an HTTPS receiver in this process, endpoints made before any session, one disabled
// for a while and one deleted mid-run, the first orchestrator SIGKILLed with a delivery of its in flight (schedules.ts
// kills it; here the receiver holds that orchestrator's requests until the signal). After the load: a bounded wait
// for the fan-out and the deliveries to pass everything stored until then, and what the checks need (webhook-checks.ts).
import { randomUUID } from 'node:crypto'
import { DeliverPolicy, type JetStreamManager, jetstream, jetstreamManager } from '@nats-io/jetstream'
import type { NatsConnection } from '@nats-io/nats-core'
import { type KV, Kvm } from '@nats-io/kv'
import type Anthropic from '@anthropic-ai/sdk'
import { DELIVERIES_CONSUMER, DELIVERIES_STREAM } from '../../actors/webhook/deliveries.js'
import { FROM_HISTORY } from '../../actors/webhook/fanout.js'
import { positionOf } from '../../actors/webhook/source-reader.js'
import { webhookEventId } from '../../actors/kit/outbox.js'
import { EventHeaders } from '../../protocol/events.js'
import { SPEC_WEBHOOK_EVENT_TYPES } from '../../protocol/schemas/webhook.js'
import { Buckets, EVENTS_STREAM, OUTBOX_STREAM } from '../../protocol/subjects.js'
import { keyringFile, newKey } from '../vaults/_helpers.js'
import { type Received, startReceiver } from '../webhooks/_helpers.js'
import type { Balancer } from './balancer.js'
import { onCleanup } from './cleanup.js'
import { readHistories } from './history.js'

/** Every session event type there is today (threads and outcomes come with their issue). */
export const SESSION_TYPES = SPEC_WEBHOOK_EVENT_TYPES.filter((type) => type.startsWith('session.') && !/thread|outcome/.test(type))
/** The endpoints: path → event types. `/toggled` is disabled for a while, `/deleted` deleted mid-run. */
export const ENDPOINTS: Record<string, readonly string[]> = {
  '/all': SESSION_TYPES,
  '/some': ['session.status_idled', 'session.updated'],
  '/toggled': SESSION_TYPES,
  '/deleted': SESSION_TYPES,
}
/** When in the load (its fraction) each change is made. The disabled stretch outlasts IN_FLIGHT_MS at 60 s of load. */
const DISABLE_AT = 0.2
const DELETE_AT = 0.45
const ENABLE_AT = 0.65
/**
 * An attempt in flight when its endpoint changed may still land this long after: a delivery reads its endpoint when it
 * is claimed, then posts with a 15 s bound (actors/webhook/deliveries.ts ATTEMPT_TIMEOUT_MS).
 */
export const IN_FLIGHT_MS = 16_000
/** How long a kill waits for a delivery of the first orchestrator to be in flight. */
const HOLD_BOUND_MS = 5_000
/**
 * After the load: the fan-out's claims of a killed orchestrator come back after 30 s, its deliveries after 60 s (the
 * ack waits), and a failed attempt after a 5–120 s pause; past this the checks say what is missing.
 */
const SETTLE_BOUND_MS = 150_000
const API_DEADLINE_MS = 60_000
const H = { 'x-api-key': 'chaos', 'anthropic-version': '2023-06-01', 'content-type': 'application/json' }
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

export interface EndpointRecord {
  path: string
  id: string
  secret: string
  types: readonly string[]
}

/** One endpoint change: sent (first attempt) and acknowledged (the answer that came back), epoch ms. */
export interface Change {
  sentAt: number
  ackedAt?: number
  error?: string
}

/** One SIGKILL of the first orchestrator: the attempts of its that were in flight (held) when the signal went. */
export interface OrchestratorKill {
  at: number
  /** Whether it ran when the signal went (a start during a NATS fault may have failed: nothing to cut then). */
  running: boolean
  /** `webhook-id`s of the held requests (to `/all`), each cut short by the signal. */
  cut: string[]
}

/** A webhook event the run's histories imply, stored before the cut-off. */
export interface ExpectedEvent {
  id: string
  type: string
  session: string
  /** Its `created_at` (epoch ms): the stored event's time in the stream, or the session's creation. */
  at: number
}

export interface WebhookData {
  endpoints: EndpointRecord[]
  disable: Change
  enable: Change
  delete: Change
  kills: OrchestratorKill[]
  /** Every request the receiver got, answered or not. */
  received: Received[]
  /** The orchestrators' receiver ports: [first (killed), second]. */
  ports: number[]
  /** The streams' last sequences when the wait began: what was stored until then is checked. */
  cutoff: { at: number; events: number; outbox: number }
  /** How long until the fan-out and the deliveries passed the cut-off; undefined: not within the bound. */
  settledMs?: number
  /** What was still pending when the wait ended. */
  pending: string
  expected: ExpectedEvent[]
  /** Every event id any stored history (or any session) would make, cut-off or not, with its type and session. */
  known: Map<string, { type: string; session: string }>
  /** Sessions whose history could not be read (their events are not expected). */
  unreadable: string[]
}

export class Webhooks {
  readonly endpoints: EndpointRecord[] = []
  readonly kills: OrchestratorKill[] = []
  readonly disable: Change = { sentAt: 0 }
  readonly enable: Change = { sentAt: 0 }
  readonly delete: Change = { sentAt: 0 }
  private readonly keyring = keyringFile([{ id: 'k1', key: newKey() }])
  private holding = false
  private running = false
  private held: Received[] = []
  private balancer: Balancer | undefined

  private constructor(private readonly receiver: Awaited<ReturnType<typeof startReceiver>>) {}

  static async start(): Promise<Webhooks> {
    let self: Webhooks | undefined
    // The first orchestrator posts to ports[0], the second to ports[1]: while a kill is armed, the first one's
    // requests to /all are held unanswered, so the signal finds them in flight.
    const receiver = await startReceiver(
      (r) => {
        if (self?.holding && r.port === self.receiver.ports[0] && r.path === '/all') {
          self.held.push(r)
          return 'hang'
        }
        return 200
      },
      { ports: 2 },
    )
    self = new Webhooks(receiver)
    onCleanup(() => receiver.close())
    return self
  }

  /** Environment of a serve host (it stores endpoints, sealing their secrets with the keyring). */
  get hostEnv(): Record<string, string> {
    return { TROUPE_VAULT_KEYRING_FILE: this.keyring, ...this.receiver.envFor(1) }
  }

  /** Environment of orchestrator `i` (0 or 1): the keyring and a receiver port of its own. */
  orchestratorEnv(i: number): Record<string, string> {
    return { TROUPE_VAULT_KEYRING_FILE: this.keyring, ...this.receiver.envFor(i) }
  }

  /** Makes the endpoints, before any session exists: every event of the run is theirs. */
  async create(balancer: Balancer): Promise<void> {
    this.balancer = balancer
    for (const [path, types] of Object.entries(ENDPOINTS)) {
      const r = await api(balancer, 'POST', '/v1/webhooks', { url: `https://hooks.example.test${path}`, event_types: types }, randomUUID())
      if (r.error) throw new Error(`webhook endpoint ${path} not created: ${r.error}`)
      this.endpoints.push({ path, id: r.json.id, secret: r.json.signing_secret, types })
    }
  }

  /** During the load: disable `/toggled`, delete `/deleted`, enable `/toggled` again, at fixed fractions of it. */
  async run(loadStart: number, seconds: number, say: (line: string) => void): Promise<void> {
    const at = (f: number) => sleep(Math.max(0, loadStart + f * seconds * 1000 - Date.now()))
    const id = (path: string) => this.endpoints.find((e) => e.path === path)!.id
    const change = async (c: Change, what: string, method: string, path: string, body?: object) => {
      const r = await api(this.balancer!, method, path, body)
      Object.assign(c, { sentAt: r.sentAt, ackedAt: r.ackedAt, error: r.error })
      say(`webhook endpoint ${what}${r.error ? ` FAILED: ${r.error}` : ` (${r.ackedAt! - r.sentAt} ms)`}`)
    }
    await at(DISABLE_AT)
    await change(this.disable, '/toggled disabled', 'POST', `/v1/webhooks/${id('/toggled')}`, { status: 'disabled' })
    await at(DELETE_AT)
    await change(this.delete, '/deleted deleted', 'DELETE', `/v1/webhooks/${id('/deleted')}`)
    await at(ENABLE_AT)
    await change(this.enable, '/toggled enabled again', 'POST', `/v1/webhooks/${id('/toggled')}`, { status: 'enabled' })
  }

  /** Just before the first orchestrator's SIGKILL: hold its requests until one is in flight (bounded). */
  async beforeKill(running: boolean): Promise<void> {
    this.held = []
    this.running = running
    if (!running) return
    this.holding = true
    const by = Date.now() + HOLD_BOUND_MS
    while (!this.held.length && Date.now() < by) await sleep(20)
  }

  /** Once it is gone: what it had in flight was cut short (each must still be delivered, by another). */
  afterKill(): void {
    this.holding = false
    this.kills.push({ at: Date.now(), running: this.running, cut: this.held.filter((r) => !r.answered).map((r) => r.headers['webhook-id'] ?? '') })
    this.held = []
  }

  /**
   * Waits (bounded) until the fan-out has passed everything stored in the events stream and the outbox until now, and
   * every delivery it queued for those is done; then reads what the checks need.
   */
  async settle(nc: NatsConnection, client: Anthropic, say: (line: string) => void): Promise<WebhookData> {
    const jsm = await jetstreamManager(nc)
    const positions = await new Kvm(nc).open(Buckets.webhookFanOut)
    const started = Date.now()
    const lastSeq = async (stream: string) => (await jsm.streams.info(stream)).state.last_seq
    const cutoff = { at: started, events: await lastSeq(EVENTS_STREAM), outbox: await lastSeq(OUTBOX_STREAM) }
    const by = started + SETTLE_BOUND_MS
    let pending = ''
    let settledMs: number | undefined
    let deliveriesTo: number | undefined
    let again = true
    while (Date.now() < by) {
      pending = await pendingFor(jsm, positions, cutoff, deliveriesTo).catch((err) => `unreadable (${(err as Error).message})`)
      if (pending === 'fanned out' && deliveriesTo === undefined) {
        // Every delivery made of what was stored by the cut-off is queued by now, at or below this sequence.
        deliveriesTo = await lastSeq(DELIVERIES_STREAM).catch(() => undefined)
        continue
      }
      if (pending === '' && again) {
        // Once more up to the queue's end now: a delivery stranded by the consumer is queued again (a new sequence)
        // before its old one goes.
        again = false
        deliveriesTo = await lastSeq(DELIVERIES_STREAM).catch(() => deliveriesTo)
        continue
      }
      if (pending === '') {
        settledMs = Date.now() - started
        break
      }
      await sleep(500)
    }
    // For the report: what the work queue still holds (acknowledged messages should be gone from it).
    const queue = await jsm.streams.info(DELIVERIES_STREAM).then(
      ({ state: q }) => `the deliveries stream holds ${q.messages} message(s)${q.messages ? ` from ${q.first_seq} to ${q.last_seq}` : ''}`,
      (err) => `the deliveries stream unreadable (${(err as Error).message})`,
    )
    const outcome =
      settledMs === undefined ? `webhooks not settled within ${SETTLE_BOUND_MS / 1000} s: ${pending}` : `webhooks settled in ${(settledMs / 1000).toFixed(1)} s`
    say(`${outcome}; ${queue}`)
    // Taken before the sessions are listed: every event received by then has its session, and its event, in what is read.
    const received = this.receiver.got.slice()
    const { expected, known, unreadable } = await expectedEvents(nc, client, cutoff.events)
    return {
      endpoints: this.endpoints,
      disable: this.disable,
      enable: this.enable,
      delete: this.delete,
      kills: this.kills,
      received,
      ports: this.receiver.ports,
      cutoff,
      settledMs,
      pending,
      expected,
      known,
      unreadable,
    }
  }
}

/** '' when settled; 'fanned out' when only the deliveries are left to wait for; else what is pending. */
async function pendingFor(jsm: JetStreamManager, positions: KV, cutoff: { events: number; outbox: number }, deliveriesTo: number | undefined): Promise<string> {
  const left: string[] = []
  for (const [stream, upTo] of [
    [EVENTS_STREAM, cutoff.events],
    [OUTBOX_STREAM, cutoff.outbox],
  ] as const) {
    // The audit too, a minute behind: what the work queue lost is queued again by it.
    for (const reading of ['source', 'audit'] as const) {
      const at = await positionOf(positions, stream, reading)
      if (at < upTo) left.push(`${reading === 'source' ? 'fan-out' : 'audit'} of ${stream} at ${at} of ${upTo}`)
    }
  }
  if (left.length) return left.join('; ')
  if (deliveriesTo === undefined) return 'fanned out'
  // The work queue itself, not the consumer's floor: nats-server 2.9.10's consumer was seen counting acknowledged
  // messages it never handed out again after a leader change (the stream kept 132 to 2311). Every delivery queued by
  // then is done once no message at or below `deliveriesTo` is left (the sweeper queues a stranded one again).
  const { state } = await jsm.streams.info(DELIVERIES_STREAM)
  if (!state.messages || state.first_seq > deliveriesTo) return ''
  const c = await jsm.consumers.info(DELIVERIES_STREAM, DELIVERIES_CONSUMER)
  return `deliveries stored from ${state.first_seq}, up to ${deliveriesTo} to wait for (the consumer acknowledged to ${c.ack_floor.stream_seq}, ${c.num_ack_pending} claimed, ${c.num_pending} waiting)`
}

/**
 * The events the run's histories imply: for every session in the store (listed), each stored event FROM_HISTORY maps,
 * if it was stored by the cut-off (its time read from the stream, as the fan-out reads it), and `status_scheduled`
 * for each session made without input (all but the deployments' runs, which start with their initial events).
 */
async function expectedEvents(nc: NatsConnection, client: Anthropic, upTo: number) {
  const stamps = await streamTimes(nc, upTo)
  const sessions: any[] = []
  for await (const s of client.beta.sessions.list({ limit: 100 } as any) as AsyncIterable<any>) sessions.push(s)
  const histories = await readHistories(
    client,
    sessions.map((s) => s.id),
  )
  const expected: ExpectedEvent[] = []
  const known = new Map<string, { type: string; session: string }>()
  const unreadable: string[] = []
  for (const s of sessions) {
    const h = histories.get(s.id)
    if (!h || 'error' in h) {
      unreadable.push(s.id)
      continue
    }
    const made = (type: string, source: string, at: number | undefined) => {
      const id = webhookEventId(type, source)
      known.set(id, { type, session: s.id })
      if (at !== undefined) expected.push({ id, type, session: s.id, at })
    }
    if (!s.deployment_id) made('session.status_scheduled', s.id, Date.parse(s.created_at))
    for (const e of h.events) for (const type of FROM_HISTORY[e.type] ?? []) made(type, e.id, stamps.get(e.id))
  }
  return { expected, known, unreadable }
}

/** Each stored event's time in the events stream (epoch ms), for the messages up to `upTo`, headers only. */
async function streamTimes(nc: NatsConnection, upTo: number): Promise<Map<string, number>> {
  const out = new Map<string, number>()
  if (upTo === 0) return out
  const js = jetstream(nc)
  const c = await js.consumers.get(EVENTS_STREAM, { headers_only: true, deliver_policy: DeliverPolicy.All })
  const iter = await c.consume({ max_messages: 1000 })
  for await (const m of iter) {
    const at = Math.floor(m.info.timestampNanos / 1_000_000)
    for (const id of (m.headers?.get(EventHeaders.id) ?? '').split(',')) if (id && !out.has(id)) out.set(id, at)
    if (m.seq >= upTo || m.info.pending === 0) break
  }
  await iter.close().catch(() => undefined)
  return out
}

/**
 * One call to the endpoints API through a gateway the balancer picks, retried (a fault may cut one off) until an answer
 * or API_DEADLINE_MS. A delete answered 404 after an attempt that went unanswered had taken effect.
 */
async function api(b: Balancer, method: string, path: string, body?: object, key?: string) {
  const sentAt = Date.now()
  let error = 'no attempt'
  let unanswered = false
  for (let retry = 0; Date.now() - sentAt < API_DEADLINE_MS; retry++) {
    const h = b.pick(undefined, retry)
    if (!h?.url) {
      await sleep(500)
      continue
    }
    try {
      const res = await fetch(`${h.url}${path}`, {
        method,
        headers: { ...H, ...(key && { 'idempotency-key': key }) },
        body: body && JSON.stringify(body),
        signal: AbortSignal.timeout(10_000),
      })
      const text = await res.text()
      if (res.status === 200 || (method === 'DELETE' && res.status === 404 && unanswered))
        return { sentAt, ackedAt: Date.now(), json: text ? JSON.parse(text) : {} }
      error = `${res.status} ${text.slice(0, 200)}`
      if (res.status < 500 && res.status !== 429) return { sentAt, error }
    } catch (err) {
      unanswered = true
      error = (err as Error).message
    }
    await sleep(500)
  }
  return { sentAt, error }
}
