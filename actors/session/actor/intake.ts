import { isApiError } from '../../../protocol/errors/api-error.js'
import { fail } from '../../../protocol/errors/fail.js'
import type { RequestTag } from '../../../protocol/events.js'
import type { EventParamsT } from '../../../protocol/schemas/events.js'
import type { ClientEvent, EventOf } from '../../../protocol/session-events.js'
import { fingerprint } from '../../../protocol/hash.js'
import { newId } from '../../../protocol/ids.js'
import { AppendUncertain, type Mailbox, storeUnavailable } from '../../kit/index.js'
import type { History } from '../history/index.js'
import { outcomeIdOf } from '../history/index.js'
import type { SessionEvents } from './events.js'

/**
 * A client event as stored: its id, and for an outcome its `outcome_id` (derived from the id, so a retry names the same
 * one) and `max_iterations` (null when not given: the default applies).
 */
function stored(e: EventParamsT, id: string): ClientEvent {
  if (e.type === 'user.define_outcome') return { ...e, id, outcome_id: outcomeIdOf(id), max_iterations: e.max_iterations ?? null, processed_at: null }
  return { ...e, id, processed_at: null }
}

/** What storing client events asks of the actor they are for. */
export interface IntakeHost {
  readonly id: string
  readonly h: History
  readonly mb: Mailbox
  readonly events: SessionEvents
  /** An interrupt was stored: the turn it names stops at its next step. */
  interrupted(e: EventOf<'user.interrupt'>): void
  /** Lets the mailbox run. */
  kick(): void
}

/**
 * Client events into a session: stored first (durable before the POST answers, a retry of a request answered with what
 * its first attempt stored), then handled by the actor's pump, in order.
 */
export class Intake {
  /** The request that stored each queued message: the turn it starts names it in its log lines. */
  private readonly rids = new Map<string, string>()
  /** Requests whose events are being stored, by key: a retry waits for its first attempt. */
  private readonly accepting = new Map<string, Promise<void>>()

  constructor(private readonly a: IntakeHost) {}

  /** The request that stored message `id` (its turn names it in its log lines), once. */
  takeRequest(id: string): string | undefined {
    const rid = this.rids.get(id)
    this.rids.delete(id)
    return rid
  }

  /**
   * Stores the client events of one POST, then lets the mailbox run. `key` names the request (`k:` and the
   * client's Idempotency-Key, else `r:` and the request id): a retry of a request already stored is answered with
   * the events stored for it, and one stored in part stores only the rest. `check` validates, against this
   * actor's state, the events about to be stored.
   */
  async accept<E extends EventParamsT>(
    sent: readonly E[],
    req: { rid: string; key?: string },
    check: (events: E[]) => void = () => undefined,
    /** The events as the client sent them, when `sent` differs (File rubrics read as text): what a retry must match. */
    original: readonly unknown[] = sent,
  ): Promise<ClientEvent[]> {
    this.a.mb.alive()
    const key = req.key !== undefined ? `k:${req.key}` : `r:${req.rid}`
    const hash = fingerprint(original)
    // A retry that arrives while its first attempt is being stored waits for it, then finds it. From here to
    // `accepting.set` nothing awaits: two attempts that arrive together (both waiting for the actor to load)
    // must not both find nothing stored and both store.
    for (let inflight = this.accepting.get(key); inflight; inflight = this.accepting.get(key)) {
      await inflight.catch(() => undefined)
      this.a.mb.alive()
    }
    const prior = this.a.h.requests.get(key)
    if (prior && prior.hash !== hash) throw fail('idempotency_key_reused')
    const events = sent.map((e, i) => stored(e, prior?.ids[i] ?? newId('sevt')))
    const todo = events.map((e, index) => ({ e, index })).filter(({ index }) => prior?.ids[index] === undefined)
    if (!todo.length) return events
    check(todo.map((t) => sent[t.index]!))
    const storing = this.store(todo, { key, hash, count: events.length }, req)
    this.accepting.set(key, storing)
    try {
      await storing
    } finally {
      if (this.accepting.get(key) === storing) this.accepting.delete(key)
    }
    return events
  }

  private async store(todo: Array<{ e: ClientEvent; index: number }>, tag: Omit<RequestTag, 'index'>, req: { rid: string; key?: string }) {
    for (const { e } of todo) if (e.type === 'user.message') this.rids.set(e.id, req.rid)
    // The work marker goes down first: if it cannot be written, nothing is stored and the POST may be retried;
    // once the events are, a host taking over finds them.
    if (todo.some(({ e }) => e.type !== 'user.interrupt')) {
      // Nothing is stored yet, whatever the marker's write did: a retry is safe.
      await this.a.mb.markWork().catch((err) => {
        throw storeUnavailable(err) ?? err
      })
    }
    let storedAny = false
    let ok: boolean
    try {
      ok = await this.a.events.write(async () => {
        // Checked again in order with the other appends: an archive that got in first wins.
        if (this.a.h.session.archived_at) return false
        for (const { e, index } of todo) {
          await this.a.events.appendClient(e, { ...tag, index })
          storedAny = true
        }
        return true
      })
    } catch (err) {
      // Certainly nothing stored (fenced off before the first append, or the actor stopping): safe to retry.
      const retryable = (!storedAny && !(err instanceof AppendUncertain)) || req.key !== undefined
      if (retryable) throw isApiError(err) ? err : fail('actor_moving', 'session')
      throw fail('outcome_uncertain', `The request's events (${todo.length})`)
    }
    if (!ok) throw fail('session_archived', this.a.id)
    // An interrupt acts at once: the running turn stops at its next step (one naming a child: that thread's), and the
    // mailbox handles the rest.
    for (const { e } of todo) if (e.type === 'user.interrupt') this.a.interrupted(e)
    this.a.kick()
  }
}
