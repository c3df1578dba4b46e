import { Bucket, type KV, type KvEntry } from '@nats-io/kv'
import { headers, type NatsConnection } from '@nats-io/transport-node'
import { PubHeaders } from '@nats-io/jetstream'
import { encode, decode } from '../../protocol/codec.js'
import { formatMarks, WEBHOOK_MARK_HEADER, type WebhookMark } from '../../protocol/webhook-event.js'
import { jsPublisher } from './js-publish.js'
import { casRetry } from './retry-policy.js'
import { casLoop, LOST } from './cas.js'
import { isCasConflict } from './nats-errors.js'

/**
 * The lifecycle events (webhooks) a change of a record makes, from what it was to what it becomes (undefined: absent
 * before a create, deleted after a delete): written in the same message as the change (WEBHOOK_MARK_HEADER), so a
 * crash cannot store one without the other. The fan-out reads them from the bucket's stream (actors/webhook).
 */
export type MarksOf<T> = (key: string, was: T | undefined, next: T | undefined) => WebhookMark[]

/** `was` of an update whose writer does not know the value it replaces: it makes no lifecycle event. */
export const UNKNOWN: unique symbol = Symbol('unknown previous value')

/** A value read from KV with the revision a compare-and-set must name. */
export interface Versioned<T> {
  value: T
  revision: number
}

/**
 * Typed msgpack records in one KV bucket.
 *
 * `owns` turns on a write-through cache for keys this host is the only writer of (single-activation
 * actors): reads of those keys are served from memory, and any failed compare-and-set drops the entry so
 * the next read goes back to KV. Keys it does not own are always read from KV. With `copies`, the cache
 * holds the stored bytes and every read decodes its own copy, for callers that change what they read (and
 * fewer bytes held than objects).
 */
export class RecordStore<T> {
  /** `shared`: with `copies`, the one decoded value `peek` hands every reader, made on its first peek. */
  private readonly cache = new Map<string, { value: T | Uint8Array; revision: number; shared?: T }>()
  /** Mutations waiting for the write in flight on their key. */
  private readonly queued = new Map<string, Mutation<T>[]>()
  private readonly draining = new Set<string>()
  /** What `mutate` last wrote per key on this host: its first guess of the current value. */
  private readonly lastWritten = new Map<string, Versioned<T>>()

  constructor(
    readonly kv: KV,
    private readonly owns: (key: string) => boolean = () => false,
    /** Cache encoded records and decode a copy per read. Default false: readers share the cached object. */
    private readonly copies = false,
    /** The lifecycle events its changes make. Default none. */
    private readonly marks?: MarksOf<T>,
  ) {}

  /** The header value of a change's events; undefined when it makes none. */
  private marked(key: string, was: T | undefined | typeof UNKNOWN, next: T | undefined): string | undefined {
    if (!this.marks || was === UNKNOWN) return undefined
    const made = this.marks(key, was, next)
    return made.length ? formatMarks(made) : undefined
  }

  async get(key: string): Promise<Versioned<T> | undefined> {
    const hit = this.cache.get(key)
    if (hit) return this.copies ? { value: decode<T>(hit.value as Uint8Array), revision: hit.revision } : (hit as Versioned<T>)
    let e = await this.kv.get(key)
    // Any replica answers a direct get, and one that is behind (restarted, catching up) says "no such key" for a
    // key that exists: a 404 for an existing session. Absence is confirmed at the stream's leader.
    if (!live(e)) e = await readAtLeader(this.kv, key)
    if (!live(e)) return undefined
    const v = { value: decode<T>(e.value), revision: e.revision }
    this.remember(key, v.value, e.value, v.revision)
    return v
  }

  /**
   * As `get`, for a caller that only reads what it gets: with `copies`, a cached record is decoded once per revision
   * and that one value is shared by every `peek`, not decoded again per read (an idle session's GET). Never mutate it.
   */
  async peek(key: string): Promise<Versioned<T> | undefined> {
    const hit = this.cache.get(key)
    if (!hit || !this.copies) return this.get(key)
    hit.shared ??= decode<T>(hit.value as Uint8Array)
    return { value: hit.shared, revision: hit.revision }
  }

  private remember(key: string, value: T, bytes: Uint8Array, revision: number) {
    if (!this.owns(key)) return
    // A copy: what was packed or received is a view into a larger buffer that caching it would keep alive.
    this.cache.set(key, { value: this.copies ? new Uint8Array(bytes) : value, revision })
  }

  /** Forgets cached entries (a partition was given away). */
  forget(match: (key: string) => boolean = () => true): void {
    for (const k of this.cache.keys()) if (match(k)) this.cache.delete(k)
    for (const k of this.lastWritten.keys()) if (match(k)) this.lastWritten.delete(k)
  }

  /** Creates the key; false if it exists. */
  create(key: string, value: T): Promise<number | false> {
    const mark = this.marked(key, undefined, value)
    return this.casWrite(key, value, (bytes) => kvCreate(this.kv, key, bytes, mark))
  }

  /** Writes if the key is still at `revision`; false if someone wrote first. `was`: the value it replaces. */
  update(key: string, value: T, revision: number, was: T | typeof UNKNOWN = UNKNOWN): Promise<number | false> {
    const mark = this.marked(key, was, value)
    return this.casWrite(key, value, (bytes) => kvPut(this.kv, key, bytes, revision, mark))
  }

  /**
   * Stores `value` with a compare-and-set (`write` sends its bytes); false if someone wrote first. On any failure
   * this host no longer knows what the key holds, so its cached value and last write are dropped.
   */
  private async casWrite(key: string, value: T, write: (bytes: Uint8Array) => Promise<number>): Promise<number | false> {
    try {
      const bytes = encode(value)
      const rev = await write(bytes)
      this.remember(key, value, bytes, rev)
      return rev
    } catch (err) {
      this.drop(key)
      if (isCasConflict(err)) return false
      throw err
    }
  }

  private drop(key: string): void {
    this.cache.delete(key)
    this.lastWritten.delete(key)
  }

  async put(key: string, value: T): Promise<number> {
    this.drop(key)
    const bytes = encode(value)
    const rev = await kvPut(this.kv, key, bytes)
    this.remember(key, value, bytes, rev)
    return rev
  }

  /** Deletes if the key is still at `revision`; false if someone wrote first. `was`: the value it deletes. */
  async delete(key: string, revision: number, was: T | typeof UNKNOWN = UNKNOWN): Promise<boolean> {
    this.drop(key)
    const mark = this.marked(key, was, undefined)
    try {
      await (mark === undefined ? this.kv.delete(key, { previousSeq: revision }) : kvDelete(this.kv, key, revision, mark))
      return true
    } catch (err) {
      if (isCasConflict(err)) return false
      throw err
    }
  }

  /**
   * Read-modify-write under CAS, retried while other writers win. `change` returns the new value, or
   * undefined to write nothing; it may throw an ApiError to refuse.
   *
   * Mutations of one key on this host are batched: those that arrive while a write is in flight are applied in
   * order to the same value and stored with one compare-and-set, each caller getting its own result (or
   * refusal) once that write lands. The first guess of the current value is the one this host last wrote; a
   * stale guess only costs a failed CAS, and an outcome that writes nothing is re-checked against KV, so callers
   * see what a fresh read would have given them. (32 concurrent session creates on one environment used to
   * take turns of a read and a write each.)
   */
  mutate<R>(
    key: string,
    change: (current: Versioned<T>) => { next?: T; result: R },
    missing: () => never,
    /** Reads of the record before contention is a 503. Default `casRetry.maximumAttempts` (20). */
    attempts = casRetry.maximumAttempts,
  ): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      let q = this.queued.get(key)
      if (!q) this.queued.set(key, (q = []))
      q.push({ change, missing, resolve, reject, attempts } as Mutation<T>)
      if (!this.draining.has(key)) void this.drain(key)
    })
  }

  private async drain(key: string): Promise<void> {
    this.draining.add(key)
    try {
      for (let batch = this.queued.get(key); batch?.length; batch = this.queued.get(key)) {
        this.queued.delete(key)
        await this.applyBatch(key, batch).catch((err) => {
          for (const m of batch!) m.reject(err)
        })
      }
    } finally {
      this.draining.delete(key)
    }
  }

  private async applyBatch(key: string, batch: Mutation<T>[]): Promise<void> {
    let guess = this.lastWritten.get(key)
    // A guess costs no read: it is an attempt on top of the bound.
    const maximumAttempts = Math.max(...batch.map((m) => m.attempts)) + (guess ? 1 : 0)
    await casLoop(
      async () => {
        const current = guess ?? (await this.get(key))
        const guessed = !!guess
        guess = undefined
        const outcomes: Array<{ ok: true; result: unknown } | { ok: false; err: unknown }> = []
        let value = current?.value
        let changed = false
        for (const m of batch) {
          try {
            if (!current) m.missing()
            const { next, result } = m.change({ value: value!, revision: current!.revision })
            if (next !== undefined) {
              value = next
              changed = true
            }
            outcomes.push({ ok: true, result })
          } catch (err) {
            outcomes.push({ ok: false, err })
          }
        }
        // A guess is trusted only once a compare-and-set on it succeeds.
        if (!changed && guessed) return LOST
        if (changed) {
          const rev = await this.update(key, value!, current!.revision, current!.value)
          if (rev === false) return LOST
          this.noteWritten(key, value!, rev)
        }
        batch.forEach((m, j) => {
          const o = outcomes[j]!
          if (o.ok) m.resolve(o.result)
          else m.reject(o.err)
        })
      },
      { ...casRetry, maximumAttempts },
    )
  }

  private noteWritten(key: string, value: T, revision: number) {
    this.lastWritten.delete(key)
    if (this.lastWritten.size >= GUESSES) this.lastWritten.delete(this.lastWritten.keys().next().value!)
    this.lastWritten.set(key, { value, revision })
  }
}

interface Mutation<T> {
  change: (current: Versioned<T>) => { next?: T; result: unknown }
  missing: () => never
  // Method syntax: each waiter resolves its own result type; the queue holds them side by side.
  resolve(result: unknown): void
  reject: (err: unknown) => void
  attempts: number
}

/** How many keys' last written values `mutate` keeps as guesses. */
const GUESSES = 1024

export const live = (e: KvEntry | null): e is KvEntry => !!e && e.operation === 'PUT'

/**
 * `kv.get` answered by the bucket stream's leader (STREAM.MSG.GET) instead of any replica (DIRECT.GET, which the
 * client uses whenever the bucket allows direct gets). The client has no option for it; it reads its `direct`
 * flag synchronously, before its first await, so the flag is off for exactly this call.
 */
export async function readAtLeader(kv: KV, key: string): Promise<KvEntry | null> {
  const bucket = kv as unknown as { direct?: boolean }
  const direct = bucket.direct
  bucket.direct = false
  let read: Promise<KvEntry | null>
  try {
    read = kv.get(key)
  } finally {
    bucket.direct = direct
  }
  return read
}

/** How long a record write waits for its acknowledgement (nats.js's JetStream default). */
const WRITE_TIMEOUT_MS = 5000

/**
 * A KV write as nats.js's `Bucket` makes it (its subject, the compare-and-set header), sent through the hot path's
 * publisher (kit/js-publish.ts): records are written on the critical path of every create and at the end of every
 * turn. `previous`: the revision the key must be at (0: absent). A bucket of another implementation writes itself.
 */
function kvPut(kv: KV, key: string, bytes: Uint8Array, previous?: number, mark?: string): Promise<number> {
  if (!(kv instanceof Bucket)) return previous === undefined ? kv.put(key, bytes) : previous === 0 ? kv.create(key, bytes) : kv.update(key, bytes, previous)
  const h = previous === undefined && mark === undefined ? undefined : headers()
  if (previous !== undefined) h?.set(PubHeaders.ExpectedLastSubjectSequenceHdr, String(previous))
  if (mark !== undefined) h?.set(WEBHOOK_MARK_HEADER, mark)
  const nc = (kv.js as unknown as { nc: NatsConnection }).nc
  return jsPublisher(nc)
    .publish(kv.subjectForKey(kv.encodeKey(key), true), bytes, h, WRITE_TIMEOUT_MS)
    .then((ack) => ack.seq)
}

/** Creates a key: absent, or deleted (its tombstone's revision is then what the write names, as nats.js does). */
async function kvCreate(kv: KV, key: string, bytes: Uint8Array, mark?: string): Promise<number> {
  try {
    return await kvPut(kv, key, bytes, 0, mark)
  } catch (err) {
    if (!isCasConflict(err)) throw err
    const e = await kv.get(key)
    if (e?.operation !== 'DEL' && e?.operation !== 'PURGE') throw err
    return kvPut(kv, key, bytes, e.revision, mark)
  }
}

/** A delete marker as nats.js's `Bucket` writes it (`KV-Operation: DEL`, fenced at `previous`), carrying `mark`. */
async function kvDelete(kv: KV, key: string, previous: number, mark: string): Promise<void> {
  const h = headers()
  h.set('KV-Operation', 'DEL')
  h.set(PubHeaders.ExpectedLastSubjectSequenceHdr, String(previous))
  h.set(WEBHOOK_MARK_HEADER, mark)
  const b = kv as Bucket
  await b.js.publish(b.subjectForKey(b.encodeKey(key), true), new Uint8Array(0), { headers: h, timeout: WRITE_TIMEOUT_MS })
}
