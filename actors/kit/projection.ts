import { performance } from 'node:perf_hooks'
import type { KV, KvWatchEntry } from '@nats-io/kv'
import type { QueuedIterator } from '@nats-io/nats-core'
import { decode } from '../../protocol/codec.js'
import { retryWhileStarting, type StartupLog } from './retry.js'
import { readAtLeader } from './store.js'

export interface Sortable {
  id: string
  created_at: string
}

/** Newest first by (created_at, id): the order every list endpoint pages through. */
export const newestFirst = (a: Sortable, b: Sortable) =>
  a.created_at < b.created_at ? 1 : a.created_at > b.created_at ? -1 : a.id < b.id ? 1 : a.id > b.id ? -1 : 0

/**
 * A watch that has delivered nothing for this long while a `fresh()` waits for writes the bucket's leader has is
 * started again. nats-server 2.9 may serve a watch's consumer from a replica whose catch-up has stalled ("Catchup for
 * stream … stalled", for minutes): such a watch never reaches the leader's last sequence, and start-up (and every list)
 * waited on it for ever. A new watch is a new consumer, placed anew.
 */
export const WATCH_STALL_MS = 5000

/**
 * A read model of one record kind, kept by watching its KV bucket: lists are served from here, never by
 * scanning keys per request. `fresh()` waits until everything written before the call is visible, so a
 * client that creates and then lists (possibly through another host) sees its own write.
 */
export class Projection<T extends Sortable, S = unknown> {
  private readonly byId = new Map<string, T>()
  private sorted: T[] = []
  private seen = 0
  private waiters: Array<{ seq: number; resolve: () => void }> = []
  private watcher?: QueuedIterator<KvWatchEntry>
  /** When the watch last delivered anything (monotonic ms). */
  private heardAt = 0
  private stallCheck?: NodeJS.Timeout
  private rewatching = false
  private stopped = false
  private log?: StartupLog
  /**
   * Until start-up has caught up, records go into `byId` only and are sorted once at the end: inserting each into
   * the sorted array as it arrives moves half the array per record, quadratic in what is stored (100,000 sessions).
   */
  private loading = true
  /** The initial load (see `start`). */
  private loaded?: Promise<void>
  /** The records under `prefix` are `S`s by the bucket's own contract (its kind writes nothing else there). */
  private readonly projectStored: (stored: unknown) => T | undefined

  constructor(
    private readonly kv: KV,
    /** Key prefix of the records this projection holds, e.g. "agent." */
    private readonly prefix: string,
    /** Turns a stored value into the projected record; undefined drops it. */
    project: (stored: S) => T | undefined = (v) => v as unknown as T,
    private readonly order: (a: T, b: T) => number = newestFirst,
  ) {
    this.projectStored = project as (stored: unknown) => T | undefined
  }

  /**
   * Starts watching the bucket (waiting out a forming cluster, said in `log` when given). What is stored loads in the
   * background: a host's start-up does not grow with it, and every read of the projection (`fresh()`) waits for the
   * load first.
   */
  async start(log?: StartupLog): Promise<void> {
    this.log = log
    await this.watch()
    this.loaded = this.load()
  }

  private async load(): Promise<void> {
    for (;;) {
      try {
        await retryWhileStarting(`${this.prefix}* projection`, () => this.caughtUp(), { log: this.log })
        break
      } catch (err) {
        if (this.stopped) return
        this.log?.warn({ err, projection: this.prefix }, `the ${this.prefix}* projection could not load yet; trying again`)
        await new Promise((r) => setTimeout(r, 1000))
      }
    }
    this.sorted = [...this.byId.values()].sort(this.order)
    this.loading = false
  }

  private async watch(): Promise<void> {
    // Every key, not just the prefix: the freshness barrier compares against the bucket's last sequence,
    // which any key may have written.
    const watcher = await retryWhileStarting(`${this.prefix}* projection`, () => this.kv.watch({ key: '>' }), { log: this.log })
    if (this.stopped) return watcher.stop()
    this.watcher = watcher
    this.heardAt = performance.now()
    void (async () => {
      // A watch replaced (stalled) may still hand over what it had buffered: older than what its successor delivers.
      for await (const e of watcher) if (watcher === this.watcher) this.apply(e)
    })()
  }

  /** While a `fresh()` waits: a watch silent for WATCH_STALL_MS is replaced (see WATCH_STALL_MS). */
  private watchForStall(): void {
    if (this.stallCheck || this.stopped) return
    this.stallCheck = setInterval(() => {
      if (!this.waiters.length) {
        clearInterval(this.stallCheck)
        this.stallCheck = undefined
        return
      }
      if (this.rewatching || performance.now() - this.heardAt < WATCH_STALL_MS) return
      this.rewatching = true
      this.log?.warn(
        { projection: this.prefix, seen: this.seen, waitingFor: Math.max(...this.waiters.map((w) => w.seq)) },
        `the ${this.prefix}* projection's watch delivered nothing for ${WATCH_STALL_MS} ms while behind the bucket (a replica that stopped catching up?): watching again`,
      )
      this.watcher?.stop()
      this.watch()
        .catch(() => undefined)
        .finally(() => {
          this.rewatching = false
        })
    }, 1000)
    this.stallCheck.unref()
  }

  private apply(e: KvWatchEntry): void {
    this.heardAt = performance.now()
    if (e.key.startsWith(this.prefix)) {
      const id = e.key.slice(this.prefix.length)
      const old = this.byId.get(id)
      if (old && !this.loading) this.remove(old)
      if (e.operation === 'PUT') {
        const rec = this.projectStored(decode(e.value))
        if (rec) {
          this.byId.set(id, rec)
          if (!this.loading) this.insert(rec)
        } else this.byId.delete(id)
      } else this.byId.delete(id)
    }
    if (e.revision > this.seen) this.seen = e.revision
    if (this.waiters.length) {
      const due = this.waiters.filter((w) => w.seq <= this.seen)
      this.waiters = this.waiters.filter((w) => w.seq > this.seen)
      for (const w of due) w.resolve()
    }
  }

  private position(rec: T): number {
    let lo = 0
    let hi = this.sorted.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (this.order(this.sorted[mid]!, rec) < 0) lo = mid + 1
      else hi = mid
    }
    return lo
  }

  private insert(rec: T) {
    this.sorted.splice(this.position(rec), 0, rec)
  }

  private remove(rec: T) {
    const i = this.position(rec)
    if (this.sorted[i] === rec) this.sorted.splice(i, 1)
    else {
      const j = this.sorted.indexOf(rec)
      if (j >= 0) this.sorted.splice(j, 1)
    }
  }

  /** Resolves once the projection has loaded and every write committed before this call has been applied. */
  async fresh(): Promise<void> {
    await this.loaded
    await this.caughtUp()
  }

  private async caughtUp(): Promise<void> {
    const last = (await this.kv.status()).streamInfo.state.last_seq
    if (last <= this.seen) return
    const caughtUp = new Promise<void>((resolve) => this.waiters.push({ seq: last, resolve }))
    this.watchForStall()
    await caughtUp
  }

  get(id: string): T | undefined {
    return this.byId.get(id)
  }

  /**
   * The record of `id` as the bucket's leader holds it now, not this projection's copy: what a destructive decision
   * reads, since a projection may be behind (a watch that lost its place in a NATS fault).
   */
  async atSource(id: string): Promise<T | undefined> {
    const e = await readAtLeader(this.kv, this.prefix + id)
    return e?.operation === 'PUT' ? this.projectStored(decode(e.value)) : undefined
  }

  /** Records in order; index of the first record strictly after `after` when given. */
  list(): readonly T[] {
    return this.sorted
  }

  startAfter(after: T | undefined): number {
    if (!after) return 0
    let i = this.position(after)
    while (i < this.sorted.length && this.order(this.sorted[i]!, after) <= 0) i++
    return i
  }

  get size() {
    return this.byId.size
  }

  stop() {
    this.stopped = true
    clearInterval(this.stallCheck)
    this.watcher?.stop()
  }
}
