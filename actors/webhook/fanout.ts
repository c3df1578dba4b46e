import type { JetStreamClient, JsMsg } from '@nats-io/jetstream'
import type { KV, Kvm } from '@nats-io/kv'
import type { Logger } from 'pino'
import { EventHeaders } from '../../protocol/events.js'
import { isId } from '../../protocol/ids.js'
import { Buckets, EVENTS_STREAM, OUTBOX_STREAM, threadOf } from '../../protocol/subjects.js'
import { storedItems } from '../../protocol/event-item.js'
import { parseMarks, readThinEvent, thinEvent, WEBHOOK_MARK_HEADER } from '../../protocol/webhook-event.js'
import { ensureOutbox, openBucket, Projection, readAtLeader, retryWhileStarting, type Storage, webhookEventId } from '../kit/index.js'
import { ensureEventsStream } from '../session/index.js'
import { enqueueDelivery, oldestQueued } from './deliveries.js'
import { ensurePosition, SourceReader } from './source-reader.js'
import { subscribedAt, WEBHOOK_PREFIX, type WebhookState } from './state.js'

/**
 * The webhook events a session's stored events make (SPEC "Webhook events"): read from the history itself, so a
 * status change and its notification are one write. Archiving is the session's `session.status_terminated`; the
 * budget's pause is its `session.usage` (emitted only then, just before the idle).
 */
export const FROM_HISTORY: Readonly<Record<string, readonly string[]>> = {
  // The client's status names beside the spec's: `running`, `idled` (every idle), `pending` (waiting to be run again,
  // the session's `rescheduling` status), `requires_action` (an idle that waits on the client: REQUIRES_ACTION).
  'session.status_running': ['session.status_run_started', 'session.running'],
  'session.status_idle': ['session.status_idled', 'session.idled', 'session.requires_action'],
  'session.status_rescheduled': ['session.status_rescheduled', 'session.pending'],
  'session.status_terminated': ['session.status_terminated', 'session.archived'],
  'session.usage': ['session.budget_reached'],
  'session.updated': ['session.updated'],
  // A child's, as the primary's subject holds them (threads: its creation, and copies of its statuses).
  'session.thread_created': ['session.thread_created'],
  'session.thread_status_idle': ['session.thread_idled'],
  'session.thread_status_terminated': ['session.thread_terminated'],
  // Every grader pass that ends (outcomes.ts), whatever its result.
  'span.outcome_evaluation_end': ['session.outcome_evaluation_ended'],
}

/** The stored types whose webhook event names a thread (`data.session_thread_id`), read from the stored event. */
const THREAD_TYPES = new Set(['session.thread_created', 'session.thread_status_idle', 'session.thread_status_terminated'])

/** Made only of an idle whose stop reason waits on the client (a tool confirmation, a custom tool's result). */
export const REQUIRES_ACTION = 'session.requires_action'
/** Whether a stored event (its JSON) makes REQUIRES_ACTION. */
export const requiresAction = (event: { stop_reason?: { type?: unknown } }) => event.stop_reason?.type === 'requires_action'

/** What of a stored event the fan-out reads when it reads the message whole. */
interface StoredEvent {
  id?: unknown
  session_thread_id?: unknown
  stop_reason?: { type?: unknown }
}

/** The durable consumer an earlier version fanned out through; its acknowledged place becomes the first position. */
const LEGACY_CONSUMER = 'webhook-fanout'

/**
 * The buckets whose record writes carry the lifecycle events they make (kit/store.ts `MarksOf`, header
 * WEBHOOK_MARK_HEADER): agents, environments, vaults and their credentials, deployments and their scheduled runs
 * starting, sessions created. Their streams are sources as the histories are.
 */
export const RECORD_SOURCES = [Buckets.agents, Buckets.environments, Buckets.vaults, Buckets.deployments, Buckets.sessions, Buckets.memoryStores].map(
  (b) => `KV_${b}`,
)

/** Where the fan-out of each source stands (source-reader.ts), in `troupe_webhook_fanout`. */
export const openPositions = (kvm: Kvm, storage: Storage) => openBucket(kvm, storage, Buckets.webhookFanOut)

/**
 * Makes the fan-out's position on each source (idempotent). Any host with a keyring does, at start-up: events from then
 * on are fanned out, even those stored before an orchestrator first runs; what came before is not (no backfill of what
 * happened while webhooks were not configured).
 */
export async function ensureFanOutPositions(storage: Storage, positions: KV): Promise<void> {
  // An orchestrator may be the first process on a new store.
  await ensureOutbox(storage)
  await ensureEventsStream(storage)
  for (const stream of [OUTBOX_STREAM, EVENTS_STREAM, ...RECORD_SOURCES]) {
    for (const reading of ['source', 'audit'] as const) {
      await retryWhileStarting(`webhook fan-out position of ${stream}`, () => ensurePosition(storage.jsm, positions, stream, LEGACY_CONSUMER, reading), {
        log: storage.log,
      })
    }
  }
}

/** How long after an event the audit looks whether each of its deliveries is accounted for. */
export const AUDIT_LAG_MS = 60_000

/** An endpoint as the fan-out reads it: what it was subscribed to, when. */
interface Subscriber {
  id: string
  created_at: string
  state: WebhookState
}

export interface FanOutOptions {
  js: JetStreamClient
  /** `troupe_webhooks`. */
  endpoints: KV
  /** `troupe_webhook_fanout` (openPositions). */
  positions: KV
  /**
   * Run as the audit instead (`records`: the delivery records bucket): each source read again AUDIT_LAG_MS (`lagMs`)
   * behind, and a delivery queued again, under an id of its own, when no record of it exists by then: the work queue
   * lost it (nats-server 2.9.10 was seen losing queued deliveries across leader changes, never attempted).
   */
  audit?: { records: KV; lagMs?: number }
  storage: Storage
  log: Logger
}

/**
 * Turns lifecycle events into deliveries (the orchestrating roles, with a keyring). Three kinds of source: the outbox
 * (payloads as the kinds wrote them), the session histories (read as headers; `FROM_HISTORY` says what each stored
 * event makes, its payload built from the event's id and stored time, so a repeat makes the same bytes) and the record
 * writes that carry their lifecycle events (RECORD_SOURCES). An event goes to
 * the endpoints subscribed to its type when it happened, by their intervals (state.ts): membership is a property of
 * the event's time, not of when it is fanned out. Each source is read in order by one orchestrator at a time
 * (source-reader.ts), each message's deliveries queued with `Nats-Msg-Id` `<event>.<endpoint>` before the next is
 * read: an orchestrator that dies leaves the rest to another, whose repeats are dropped as duplicates (or, after two
 * minutes, deduplicated by receivers on `webhook-id`).
 */
export class FanOut {
  private readonly subscribers: Projection<Subscriber, WebhookState>
  private readonly readers: SourceReader[] = []
  /** When the last freshness read of the endpoints began (epoch ms), and that read while it runs. */
  private freshFrom = 0
  private freshening: { from: number; done: Promise<void> } | undefined
  private stopping = false

  constructor(private readonly o: FanOutOptions) {
    this.subscribers = new Projection<Subscriber, WebhookState>(o.endpoints, WEBHOOK_PREFIX, (s) => ({
      id: s.endpoint.id,
      created_at: s.endpoint.created_at,
      state: s,
    }))
  }

  async start(): Promise<void> {
    await this.subscribers.start(this.o.storage.log)
    await ensureFanOutPositions(this.o.storage, this.o.positions)
    const audit = this.o.audit
    const read = (stream: string, handle: (m: JsMsg) => Promise<void>, more: { headersOnly?: boolean } = {}) => {
      const lagged = audit ? async (m: JsMsg) => this.lag(m, audit.lagMs ?? AUDIT_LAG_MS).then(() => handle(m)) : handle
      const reading = audit ? ('audit' as const) : ('source' as const)
      const reader = new SourceReader({ js: this.o.js, positions: this.o.positions, stream, reading, handle: lagged, log: this.o.log, ...more })
      reader.start()
      this.readers.push(reader)
    }
    read(OUTBOX_STREAM, (m) => this.fromOutbox(m))
    // Headers only: the types and ids of the stored events are all the fan-out reads of a history.
    read(EVENTS_STREAM, (m) => this.fromHistory(m), { headersOnly: true })
    for (const stream of RECORD_SOURCES) read(stream, (m) => this.fromRecords(m), { headersOnly: true })
  }

  async stop(): Promise<void> {
    this.stopping = true
    await Promise.all(this.readers.map((r) => r.stop()))
    this.subscribers.stop()
  }

  private async fromOutbox(m: JsMsg): Promise<void> {
    const e = readThinEvent(new TextDecoder().decode(m.data))
    if (!e || !isId('whe', e.id)) {
      return this.o.log.warn({ subject: m.subject, seq: m.seq }, 'an outbox message that is no webhook event is skipped')
    }
    await this.deliver(e.id, e.type, e.at, m.data)
  }

  /** A record write's lifecycle events (its header): each made at the write's stored time, its id from the write's place. */
  private async fromRecords(m: JsMsg): Promise<void> {
    const marks = m.headers?.get(WEBHOOK_MARK_HEADER)
    if (!marks) return
    const at = Math.floor(m.info.timestampNanos / 1_000_000)
    await Promise.all(
      parseMarks(marks).map((mark) => {
        const id = webhookEventId(mark.type, mark.source ?? `${m.info.stream}.${m.seq}`)
        return this.deliver(id, mark.type, at, new TextEncoder().encode(thinEvent(id, at, mark.type, mark.id, undefined, mark.vault)))
      }),
    )
  }

  private async fromHistory(m: JsMsg): Promise<void> {
    // Most stored messages make no webhook event (messages, spans, tool calls): passed with no more work.
    const types = (m.headers?.get(EventHeaders.type) ?? '').split(',')
    // Everything a webhook tells is on a session's primary subject: a child's own subject is its conversation.
    if (!types.some((type) => Object.hasOwn(FROM_HISTORY, type)) || threadOf(m.subject) !== 'primary') return
    const sessionId = m.subject.split('.')[2] ?? ''
    if (!isId('sesn', sessionId)) return
    const ids = (m.headers?.get(EventHeaders.id) ?? '').split(',')
    const at = Math.floor(m.info.timestampNanos / 1_000_000)
    // Headers name no thread and no stop reason: the few messages that need one are read whole (an idle only when an
    // endpoint is subscribed to REQUIRES_ACTION then).
    await this.freshAt(at)
    const whole =
      types.some((type) => THREAD_TYPES.has(type)) ||
      (types.includes('session.status_idle') && this.subscribers.list().some((s) => subscribedAt(s.state, REQUIRES_ACTION, at)))
    const events = whole ? await this.eventsOf(m.seq) : new Map<string, StoredEvent>()
    const made: Array<Promise<void>> = []
    types.forEach((type, i) => {
      const source = ids[i]
      if (!source) return
      const thread = THREAD_TYPES.has(type) ? events.get(source)?.session_thread_id : undefined
      if (THREAD_TYPES.has(type) && typeof thread !== 'string') return
      for (const hook of FROM_HISTORY[type] ?? []) {
        if (hook === REQUIRES_ACTION && !requiresAction(events.get(source) ?? {})) continue
        const id = webhookEventId(hook, source)
        made.push(this.deliver(id, hook, at, new TextEncoder().encode(thinEvent(id, at, hook, sessionId, thread as string | undefined))))
      }
    })
    await Promise.all(made)
  }

  /** The events of stored message `seq`, by event id. */
  private async eventsOf(seq: number): Promise<Map<string, StoredEvent>> {
    const out = new Map<string, StoredEvent>()
    const jsm = await this.o.js.jetstreamManager(false)
    const m = await jsm.direct.getMessage(EVENTS_STREAM, { seq })
    if (!m) return out
    for (const item of storedItems(m.header, m.string(), m.seq)) {
      try {
        const ev = JSON.parse(item.json) as StoredEvent
        if (typeof ev.id === 'string') out.set(ev.id, ev)
      } catch {
        // Not an event: nothing the fan-out reads.
      }
    }
    return out
  }

  /** Queues the event for every endpoint subscribed to its type at `at`. */
  private async deliver(event: string, type: string, at: number, bytes: Uint8Array): Promise<void> {
    await this.freshAt(at)
    const to = this.subscribers.list().filter((s) => subscribedAt(s.state, type, at))
    const records = this.o.audit?.records
    if (!records) return void (await Promise.all(to.map((s) => enqueueDelivery(this.o.js, s.id, event, bytes))))
    await Promise.all(
      to.map(async (s) => {
        // Delivered, failed, dropped, or failing and coming back: accounted for.
        if ((await records.get(`${s.id}.${event}`)) !== null) return
        if ((await readAtLeader(records, `${s.id}.${event}`)) !== null) return
        // No record, and nothing queued for the endpoint from before the audit's point: it was lost. Something older
        // still queued (a busy endpoint's backlog) may be it: looked at again (in order) once that has gone.
        const oldest = await oldestQueued(this.o.storage.jsm, s.id)
        if (oldest !== undefined && oldest <= at + (this.o.audit?.lagMs ?? AUDIT_LAG_MS)) throw new Error(`${s.id} has deliveries waiting from before ${event}`)
        await enqueueDelivery(this.o.js, s.id, event, bytes, 'audit')
        this.o.log.warn({ endpoint: s.id, event, type }, 'a webhook delivery with no record a minute on was queued again')
      }),
    )
  }

  /** Waits until `m` is `lagMs` old, or throws once stopping (so that a stop does not wait out the lag). */
  private async lag(m: JsMsg, lagMs: number): Promise<void> {
    const due = Math.floor(m.info.timestampNanos / 1_000_000) + lagMs
    while (Date.now() < due && !this.stopping) await new Promise((r) => setTimeout(r, Math.min(250, due - Date.now())))
    if (this.stopping) throw new Error('stopping')
  }

  /**
   * Waits until the endpoints read include every change made before `at`: a freshness read begun after `at` covers
   * it, and one read serves every event of its time (not one per event).
   */
  private async freshAt(at: number): Promise<void> {
    if (at < this.freshFrom) return
    if (this.freshening && at < this.freshening.from) return this.freshening.done
    const from = Date.now()
    const done = this.subscribers.fresh().then(
      () => {
        this.freshFrom = Math.max(this.freshFrom, from)
        if (this.freshening?.done === done) this.freshening = undefined
      },
      (err: unknown) => {
        // A failed read is not kept for the events that wait on it: the next asks again.
        if (this.freshening?.done === done) this.freshening = undefined
        throw err
      },
    )
    this.freshening = { from, done }
    return done
  }
}
