import type { Logger } from 'pino'
import { partitionOf } from '../../protocol/subjects.js'
import { OwnedPartitions } from './owned.js'
import { WorkMarks, type Taking } from './work-marks.js'
import { intervalAfter, rebuildRetry, type RetryPolicy } from './retry-policy.js'
import { activations, actorsLive, partitionMoves, passivations } from './metrics.js'
import type { CounterChild } from '../../metrics/index.js'

/** What activation needs of an actor of a partitioned kind. */
export interface Activatable {
  readonly id: string
  /** Set once the actor stopped (failed, passivated, shut down): a new one replaces it. */
  readonly dead: boolean
  /** When it last did or was asked something (ms since the epoch); passivation counts from here. */
  lastActive: number
  /** How long it may stay idle in memory (ms); the kind's `idleMs` when absent. */
  readonly idleMs?: number
  /** Leaves memory if it has nothing to do; false (and stays) otherwise. */
  passivate(): Promise<boolean>
  /**
   * Stops: its partition went to another host, or this host stops. `handOver`: this host names the next owner once
   * this returns (nobody else serves the partition meanwhile), so the actor may still tidy what it alone owns (an
   * idle session's work marker); otherwise it writes nothing.
   */
  shutdown(handOver?: boolean): Promise<void>
  /** Goes on with the work it has in flight (after a rebuild or a takeover). */
  kick(): void
  /** Gives up the work in flight after failing again and again; `message` says why, to the client. */
  abandon(message: string): void
}

export interface ActivationOptions<A extends Activatable> {
  /** Names the kind in log lines. */
  kind: string
  log: Logger
  /** Whether this host may serve partition p right now (its heartbeat is fresh): rebuilds wait while it is not. */
  serves(partition: number): boolean
  /** Builds the actor of `id` from what is stored (its record, its history); undefined when it does not exist. */
  load(id: string): Promise<A | undefined>
  /** The ids of partition p with work in flight (their work markers), resumed when this host takes it over. */
  listWork(partition: number): Promise<string[]>
  /** An idle actor leaves memory after this long (ms). */
  idleMs: number
  /** An actor that fails this many times in a row on its own has its work abandoned. Default 5. */
  maxRebuilds?: number
  /** The longest pause between attempts to rebuild an actor or list a partition's work (ms). Default 5000 (`rebuildRetry`). */
  rebuildMaxWaitMs?: number
}

/**
 * Single activation on one host: which actors of a kind live here, loading each at most once at a time,
 * passivating the idle ones, rebuilding one that failed while its work is in flight, and resuming the actors a
 * previous owner left with work when this host takes their partition over. The kind supplies load, listWork and
 * the actor; the host's placement decides which partitions are served here (`acquired`, `released`).
 */
export class Activations<A extends Activatable> {
  /** Partitions this host serves: only their actors are rebuilt after a failure. */
  readonly owned = new OwnedPartitions()
  /** The work markers of those partitions, as their owner knows them (reads of idle actors ask it first). */
  readonly marks = new WorkMarks()
  private readonly live = new Map<string, A>()
  private readonly loading = new Map<string, Promise<A | undefined>>()
  /** Consecutive own failures per actor, for the rebuild back-off and the give-up bound. */
  private readonly failures = new Map<string, number>()
  private readonly sweep: NodeJS.Timeout
  private readonly maxRebuilds: number
  private readonly policy: RetryPolicy
  private sweeping = false
  /** Listing work to resume failed and has not succeeded since: said once, not per partition and attempt. */
  private listingFails = false
  /** Actors whose rebuild could not load them and has not since: said once per actor, not per attempt. */
  private readonly loadFails = new Set<string>()
  /** How many times each partition was given away: a load that began before the latest is not kept. */
  private readonly releases = new Map<number, number>()
  private readonly counts: { activated: CounterChild; passivated: CounterChild; gained: CounterChild; lost: CounterChild }
  private readonly untrack: () => void

  constructor(private readonly o: ActivationOptions<A>) {
    this.counts = {
      activated: activations.child(o.kind),
      passivated: passivations.child(o.kind),
      gained: partitionMoves.child(o.kind, 'gained'),
      lost: partitionMoves.child(o.kind, 'lost'),
    }
    this.untrack = actorsLive.track(() => [[[o.kind], this.live.size]])
    this.maxRebuilds = o.maxRebuilds ?? 5
    this.policy = { ...rebuildRetry, maximumIntervalMs: o.rebuildMaxWaitMs ?? rebuildRetry.maximumIntervalMs }
    this.sweep = setInterval(() => void this.passivateIdle(), Math.max(50, Math.min(o.idleMs / 2, 5000)))
    this.sweep.unref()
  }

  /** The live actor of `id`, loading it when needed (one load at a time per id); undefined if none exists. */
  get(id: string): Promise<A | undefined> {
    const a = this.live.get(id)
    if (a && !a.dead) return Promise.resolve(a)
    let p = this.loading.get(id)
    if (!p) {
      const part = partitionOf(id)
      const released = this.releases.get(part)
      const loading: Promise<A | undefined> = this.o
        .load(id)
        .then(async (loaded) => {
          if (!loaded) return loaded
          // The partition went to another host while this was loading: what was read may change there, so this
          // actor answers as a stopped one does (a retryable 503) and is not kept.
          if (this.releases.get(part) !== released) {
            await loaded.shutdown()
            return loaded
          }
          this.live.set(id, loaded)
          this.counts.activated.inc()
          return loaded
        })
        .finally(() => {
          if (this.loading.get(id) === loading) this.loading.delete(id)
        })
      this.loading.set(id, (p = loading))
    }
    return p
  }

  /** The actor if it is in memory now; a read keeps it there (its reads then need no round trip to the store). */
  peek(id: string): A | undefined {
    const a = this.live.get(id)
    if (!a || a.dead) return undefined
    a.lastActive = Date.now()
    return a
  }

  /** The actors in memory now, failed ones included until they are replaced (for metrics read at a scrape). */
  inMemory(): IterableIterator<A> {
    return this.live.values()
  }

  /** An actor created on this host starts in memory. */
  add(a: A): void {
    this.live.set(a.id, a)
    this.counts.activated.inc()
  }

  /** The actor left memory without failing (deleted, or passivated). */
  gone(a: A): void {
    if (this.live.get(a.id) === a) this.live.delete(a.id)
    this.failures.delete(a.id)
  }

  /**
   * The actor failed: it is rebuilt from what was stored and carries on, while this host serves its partition.
   * `own`: the failure was the actor's own (a bug, bad data), which would recur; not the store being unavailable,
   * a lost fence or a lapsed heartbeat. Only those count towards abandoning its work.
   */
  crashed(a: A, own: boolean): void {
    if (this.live.get(a.id) === a) this.live.delete(a.id)
    const n = (this.failures.get(a.id) ?? 0) + (own ? 1 : 0)
    this.failures.set(a.id, n)
    this.rebuild(a.id, Math.max(0, n - 1))
  }

  /**
   * This host serves partition p from now: resume its actors that have work in flight. The listing runs on its own
   * (retried while the store cannot answer): a placement pass, which takes every partition it gains through here,
   * never waits on the store for it, so one slow listing cannot hold back the partitions the pass hands over or claims.
   */
  async acquired(p: number): Promise<void> {
    this.owned.add(p)
    this.counts.gained.inc()
    void this.resumeWork(p, this.marks.begin(p))
  }

  /** Partition p goes to another host: its actors stop here (see `Activatable.shutdown` for `handOver`). */
  async released(p: number, handOver = false): Promise<void> {
    this.owned.delete(p)
    this.counts.lost.inc()
    this.marks.drop(p)
    this.releases.set(p, (this.releases.get(p) ?? 0) + 1)
    for (const id of [...this.loading.keys()]) if (partitionOf(id) === p) this.loading.delete(id)
    for (const a of [...this.live.values()]) {
      if (partitionOf(a.id) !== p) continue
      this.live.delete(a.id)
      await a.shutdown(handOver)
    }
  }

  async close(): Promise<void> {
    clearInterval(this.sweep)
    this.untrack()
    await Promise.all([...this.live.values()].map((a) => a.shutdown()))
    this.live.clear()
  }

  /**
   * Rebuilds a failed actor, at once the first time, then backing off, while this host owns it: an actor with work
   * in flight is never left without anyone driving it until a client happens to ask. A store that cannot be read
   * yet is tried again; an actor that keeps failing on its own has its work abandoned.
   */
  private rebuild(id: string, attempt: number): void {
    const t = setTimeout(() => {
      const p = partitionOf(id)
      if (!this.owned.has(p)) {
        this.loadFails.delete(id)
        return this.failures.delete(id)
      }
      // The heartbeat lapsed: wait until the records say whether the partition is still ours.
      if (!this.o.serves(p)) return this.rebuild(id, attempt + 1)
      this.get(id).then(
        (a) => {
          this.loadFails.delete(id)
          if (!a) return this.failures.delete(id)
          const n = this.failures.get(id) ?? 0
          if (n < this.maxRebuilds) return a.kick()
          this.failures.delete(id)
          a.abandon(`The ${this.o.kind}'s actor failed ${n} times in a row while running this turn; the turn was ended. Send a message to continue.`)
        },
        (err) => {
          // The store may stay away for a while (NATS restarting): the retries go on, the line is not repeated.
          if (!this.loadFails.has(id)) this.o.log.warn({ err, [this.o.kind]: id }, `${this.o.kind} could not be rebuilt yet; trying again until it is`)
          this.loadFails.add(id)
          this.rebuild(id, attempt + 1)
        },
      )
    }, this.backoff(attempt))
    t.unref()
  }

  /**
   * Resumes the actors of partition p that the previous owner left with work in flight. Listing them needs the
   * store: while it cannot answer (the partition was taken over during a NATS fault), the listing is tried again,
   * backing off, as long as the partition stays ours.
   */
  private async resumeWork(p: number, taking: Taking, attempt = 0): Promise<void> {
    try {
      const ids = await this.o.listWork(p)
      if (!this.owned.has(p)) return
      this.listingFails = false
      this.marks.listed(p, taking, ids)
      for (const id of ids) this.rebuild(id, 0)
    } catch (err) {
      if (!this.owned.has(p)) return
      if (!this.listingFails) {
        this.listingFails = true
        this.o.log.warn({ err, partition: p }, `${this.o.kind}s with work in flight could not be listed yet; trying again until they are`)
      }
      setTimeout(() => void this.resumeWork(p, taking, attempt + 1), this.backoff(attempt + 1)).unref()
    }
  }

  /** Attempt 0 at once, then the policy's pauses. */
  private backoff(attempt: number): number {
    return attempt === 0 ? 0 : intervalAfter(this.policy, attempt)
  }

  /** Passivation: idle actors leave memory (their state is what was stored). One pass at a time. */
  private async passivateIdle(): Promise<void> {
    if (this.sweeping) return
    this.sweeping = true
    try {
      const t = Date.now()
      for (const a of [...this.live.values()]) {
        if (t - a.lastActive >= (a.idleMs ?? this.o.idleMs) && (await a.passivate())) {
          this.gone(a)
          this.counts.passivated.inc()
        }
      }
    } finally {
      this.sweeping = false
    }
  }
}
