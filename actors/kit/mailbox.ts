import type { KV } from '@nats-io/kv'
import type { Logger } from 'pino'
import { isApiError } from '../../protocol/errors/api-error.js'
import { fail } from '../../protocol/errors/fail.js'
import { isTransientNatsError } from './nats-errors.js'
import type { WorkMarks } from './work-marks.js'
import { mailboxDepthOf } from './metrics.js'
import type { GaugeChild } from '../../metrics/index.js'

/**
 * How long a write waits for a lapsed heartbeat to settle (see `MailboxOptions.whenServing`). The host claims its
 * partitions back as soon as a beat lands, and another host takes one over only after the beat's TTL (2 s) has
 * passed, so either outcome is known well within this.
 */
export const SERVING_WAIT_MS = 5000

/** Another writer got in first (a fenced append or record write was refused): this host no longer owns the actor. */
export class FenceLost extends Error {}

/** This host's heartbeat lapsed: it may no longer own the actor, so it writes nothing until it knows. */
export class NotServing extends Error {}

/**
 * A write refused because this host no longer serves the actor (its fence lost, its heartbeat lapsed past the wait),
 * as the caller must see it: the catalog's retryable 503 `actor_moving`, never a 500. Other errors pass through.
 */
export const asMoving = (kind: string) => (err: unknown) => (err instanceof FenceLost || err instanceof NotServing ? fail('actor_moving', kind) : err)

/** A write got no answer in time: it may or may not be stored. */
export class AppendUncertain extends Error {}

export interface MailboxOptions {
  /** Names the kind in log lines and in the 503 a stopped actor answers. */
  kind: string
  id: string
  log: Logger
  /** The bucket and key of this actor's work marker: present while it has work a takeover must resume. */
  work: { kv: Pick<KV, 'put' | 'delete'>; key: string; marks?: WorkMarks }
  /** The marker is known to be present already (a takeover found it): the next unmark clears it. */
  workMarked?: boolean
  /**
   * Whether this host may still write for the actor (it holds the partition and its heartbeat is fresh). Checked
   * before every write: a host whose heartbeat lapsed steps the actor down instead of writing. Default: always.
   */
  serves?: () => boolean
  /**
   * Resolves true once this host serves the actor's partition again after its heartbeat lapsed (it claimed it back at
   * the revision it held: nobody served it meanwhile), false once it gave the partition up or `ms` passed. A write
   * waits for it rather than stepping the actor down at once, so that a host busy for a moment (a slow heartbeat
   * under load, no other host taking over) keeps its actors and their work in flight. Default: none (step down).
   */
  whenServing?: (ms: number) => Promise<boolean>
  /**
   * Called once, when a write failed and the actor stopped. `own`: the failure was the actor's own (a bug, bad
   * data), which would recur; not the store being unavailable, a lost fence or a lapsed heartbeat.
   */
  onFail(own: boolean): void
}

/**
 * The write side of a single-activation actor: its writes run one at a time, in order (each fenced append names
 * the sequence the previous one got), and the first that fails stops the actor, which is then rebuilt from what
 * was stored, so nothing it did on top of an unstored write survives. A lost fence or a lapsed heartbeat steps it
 * down. The record, which sums up the writes, is written after them (`persist`). The work marker tells the next
 * owner after a takeover that this actor has work in flight.
 */
export class Mailbox {
  private chain: Promise<unknown> = Promise.resolve()
  private persisting: Promise<void> = Promise.resolve()
  private workMarked: boolean
  private stopped = false
  private readonly depth: GaugeChild

  constructor(private readonly o: MailboxOptions) {
    this.workMarked = o.workMarked ?? false
    this.depth = mailboxDepthOf(o.kind)
  }

  /** True once the actor stopped (failed, stepped down, passivated, shut down or deleted). */
  get dead(): boolean {
    return this.stopped
  }

  /** Stops the actor without counting a failure: nothing more is written. */
  stop(): void {
    this.stopped = true
  }

  /** Writes one at a time, in order; the first failure stops the actor. */
  write<T>(fn: () => Promise<T>): Promise<T> {
    this.depth.inc()
    const run = this.chain.then(async () => {
      this.alive()
      await this.untilServing()
      this.alive()
      return fn()
    })
    this.chain = run.then(
      () => this.depth.dec(),
      (err) => {
        this.depth.dec()
        this.fail(err)
      },
    )
    return run
  }

  /** A write nobody waits for: its failure stops the actor (see `write`). */
  enqueue(fn: () => Promise<unknown>): void {
    this.write(fn).catch(() => undefined)
  }

  /** Resolves once every write already queued is done (stored, or failed and the actor stopped). */
  async settled(): Promise<void> {
    await this.chain
  }

  /** Queues a write of the record after every queued write: the record follows what it sums up. */
  persist(fn: () => Promise<void>): Promise<void> {
    this.persisting = this.persisting
      .then(() => this.chain)
      .then(async () => {
        if (!this.stopped) await fn()
      })
      .catch((err) => this.fail(err))
    return this.persisting
  }

  /** Resolves once every record write already queued is done. */
  async persisted(): Promise<void> {
    await this.persisting
  }

  /** Sets the work marker (once): from here a takeover resumes this actor. */
  async markWork(): Promise<void> {
    if (this.workMarked) return
    // Known before it is stored: a reader told "work in flight" too early only takes the slower, exact path.
    this.o.work.marks?.mark(this.o.id)
    await this.o.work.kv.put(this.o.work.key, new Uint8Array())
    this.workMarked = true
  }

  /** Clears the work marker: nothing is left for a takeover to resume. */
  async unmarkWork(force = false): Promise<void> {
    if (!this.workMarked && !force) return
    this.workMarked = false
    this.o.work.marks?.unmark(this.o.id)
    // A delete marker, not a purge: on nats-server 2.9 a KV purge (a subject rollup) that races a write to another
    // key makes push consumers (a projection's watch) skip that write, so lists showed a stale status.
    await this.o.work.kv.delete(this.o.work.key).catch(() => undefined)
  }

  /**
   * Throws NotServing once this host may no longer write for the actor. Every write checks it before it starts; a
   * write that awaited something checks again before it stores, and so does a side effect that a new owner would not
   * know had begun (a session's tool run). `then`: what the actor does not do meanwhile, for the log line.
   */
  checkServing(then = 'it writes nothing until it re-reads its partitions'): void {
    if (this.o.serves && !this.o.serves()) throw new NotServing(`${this.o.kind} ${this.o.id}: this host's heartbeat lapsed; ${then}`)
  }

  /**
   * As `checkServing`, but a lapsed heartbeat is first waited out (up to SERVING_WAIT_MS): the actor steps down only
   * if this host gave the partition up, or did not learn whether it still holds it in time.
   */
  async untilServing(then?: string): Promise<void> {
    if (this.o.serves && !this.o.serves() && this.o.whenServing) await this.o.whenServing(SERVING_WAIT_MS)
    this.checkServing(then)
  }

  /** Throws the retryable 503 a stopped actor answers: its replacement (here or on another host) will serve. */
  alive(): void {
    if (this.stopped) throw fail('actor_moving', this.o.kind)
  }

  /** A write failed: say why, stop, and let activation rebuild the actor. Only the first failure counts. */
  fail(err: unknown): void {
    if (this.stopped) return
    const steppedDown = err instanceof FenceLost || err instanceof NotServing
    const storeDown = !steppedDown && (err instanceof AppendUncertain || isTransientNatsError(err) || (isApiError(err) && err.status === 503))
    const { kind, id, log } = this.o
    if (steppedDown) {
      log.warn({ [kind]: id, err: err.message }, `${kind} actor stepping down`)
    } else if (storeDown) {
      log.warn({ [kind]: id, err: (err as Error).message }, `${kind} actor stopped: the store is unavailable; it will be rebuilt from its history`)
    } else {
      log.error({ [kind]: id, err }, `${kind} actor failed; it will be rebuilt from its history`)
    }
    this.stopped = true
    // Stepping down is not the end: while this host (still, or again) serves the partition, the actor is rebuilt
    // here from what was stored, including what another writer slipped in. Else its new owner has it.
    this.o.onFail(!steppedDown && !storeDown)
  }
}
