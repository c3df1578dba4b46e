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

  /** Watches the bucket and waits until the projection is fresh, waiting out a forming cluster (said in `log`, when given). */
  async start(log?: StartupLog): Promise<void> {
    // Every key, not just the prefix: the freshness barrier compares against the bucket's last sequence,
    // which any key may have written.
    const what = `${this.prefix}* projection`
    this.watcher = await retryWhileStarting(what, () => this.kv.watch({ key: '>' }), { log })
    void (async () => {
      for await (const e of this.watcher!) this.apply(e)
    })()
    await retryWhileStarting(what, () => this.fresh(), { log })
  }

  private apply(e: KvWatchEntry): void {
    if (e.key.startsWith(this.prefix)) {
      const id = e.key.slice(this.prefix.length)
      const old = this.byId.get(id)
      if (old) this.remove(old)
      if (e.operation === 'PUT') {
        const rec = this.projectStored(decode(e.value))
        if (rec) {
          this.byId.set(id, rec)
          this.insert(rec)
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

  /** Resolves once every write committed before this call has been applied. */
  async fresh(): Promise<void> {
    const last = (await this.kv.status()).streamInfo.state.last_seq
    if (last <= this.seen) return
    await new Promise<void>((resolve) => this.waiters.push({ seq: last, resolve }))
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
    this.watcher?.stop()
  }
}
