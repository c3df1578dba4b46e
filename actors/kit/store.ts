import type { KV, KvEntry } from '@nats-io/kv'
import { JetStreamApiCodes, JetStreamApiError } from '@nats-io/jetstream'
import { encode, decode } from '../../protocol/codec.js'
import { unavailable } from '../../protocol/errors.js'

/** A value read from KV with the revision a compare-and-set must name. */
export interface Versioned<T> {
  value: T
  revision: number
}

/** True when a CAS write lost the race: the key moved on (update) or already exists (create). */
export function isCasConflict(err: unknown): boolean {
  if (err instanceof JetStreamApiError) {
    return err.code === JetStreamApiCodes.StreamWrongLastSequence || err.code === 10164
  }
  // kv.create reports an existing key as a plain error after re-checking the last value.
  return err instanceof Error && /wrong last sequence|key exists/i.test(err.message)
}

/**
 * Typed msgpack records in one KV bucket.
 *
 * `owns` turns on a write-through cache for keys this host is the only writer of (single-activation
 * actors): reads of those keys are served from memory, and any failed compare-and-set drops the entry so
 * the next read goes back to KV. Keys it does not own are always read from KV.
 */
export class RecordStore<T> {
  private readonly cache = new Map<string, Versioned<T>>()
  /** The last queued mutation of each key (settles, never rejects). */
  private readonly turns = new Map<string, Promise<void>>()

  constructor(
    readonly kv: KV,
    private readonly owns: (key: string) => boolean = () => false,
  ) {}

  async get(key: string): Promise<Versioned<T> | undefined> {
    const hit = this.cache.get(key)
    if (hit) return hit
    const e = await this.kv.get(key)
    const v = live(e) ? { value: decode<T>(e.value), revision: e.revision } : undefined
    if (v) this.remember(key, v.value, v.revision)
    return v
  }

  private remember(key: string, value: T, revision: number) {
    if (this.owns(key)) this.cache.set(key, { value, revision })
  }

  /** Forgets cached entries (a partition was given away). */
  forget(match: (key: string) => boolean = () => true): void {
    for (const k of this.cache.keys()) if (match(k)) this.cache.delete(k)
  }

  /** Creates the key; false if it exists. */
  async create(key: string, value: T): Promise<number | false> {
    try {
      const rev = await this.kv.create(key, encode(value))
      this.remember(key, value, rev)
      return rev
    } catch (err) {
      this.cache.delete(key)
      if (isCasConflict(err)) return false
      throw err
    }
  }

  /** Writes if the key is still at `revision`; false if someone wrote first. */
  async update(key: string, value: T, revision: number): Promise<number | false> {
    try {
      const rev = await this.kv.update(key, encode(value), revision)
      this.remember(key, value, rev)
      return rev
    } catch (err) {
      this.cache.delete(key)
      if (isCasConflict(err)) return false
      throw err
    }
  }

  async put(key: string, value: T): Promise<number> {
    this.cache.delete(key)
    const rev = await this.kv.put(key, encode(value))
    this.remember(key, value, rev)
    return rev
  }

  /** Deletes if the key is still at `revision`; false if someone wrote first. */
  async delete(key: string, revision: number): Promise<boolean> {
    this.cache.delete(key)
    try {
      await this.kv.delete(key, { previousSeq: revision })
      return true
    } catch (err) {
      if (isCasConflict(err)) return false
      throw err
    }
  }

  /**
   * Read-modify-write under CAS, retried while other writers win. `change` returns the new value, or
   * undefined to write nothing; it may throw an ApiError to refuse.
   */
  async mutate<R>(
    key: string,
    change: (current: Versioned<T>) => { next?: T; result: R },
    missing: () => never,
    attempts = 20,
  ): Promise<R> {
    // Mutations of one key on this host take turns, so CAS retries are only needed against other hosts
    // (32 concurrent session creates on one environment used to exhaust the attempts and fail).
    const prev = this.turns.get(key) ?? Promise.resolve()
    const mine = prev.then(() => this.mutateNow(key, change, missing, attempts))
    const turn = mine.then(() => undefined, () => undefined)
    this.turns.set(key, turn)
    void turn.then(() => {
      if (this.turns.get(key) === turn) this.turns.delete(key)
    })
    return mine
  }

  private async mutateNow<R>(
    key: string,
    change: (current: Versioned<T>) => { next?: T; result: R },
    missing: () => never,
    attempts: number,
  ): Promise<R> {
    for (let i = 0; i < attempts; i++) {
      const current = await this.get(key)
      if (!current) missing()
      const { next, result } = change(current)
      if (next === undefined) return result
      if ((await this.update(key, next, current.revision)) !== false) return result
    }
    throw unavailable('Too many concurrent changes to the same record; retry shortly')
  }
}

export const live = (e: KvEntry | null): e is KvEntry => !!e && e.operation === 'PUT'
