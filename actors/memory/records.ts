import { type Consumer, DeliverPolicy, type JetStreamClient, PubHeaders } from '@nats-io/jetstream'
import type { KV } from '@nats-io/kv'
import { headers, type NatsConnection, TimeoutError } from '@nats-io/nats-core'
import { decode, encode } from '../../protocol/codec.js'
import type { MemoryActor, MemoryOperation } from '../../protocol/schemas/memory.js'
import { FenceLost, isCasConflict, jsPublisher, NotServing, readAtLeader } from '../kit/index.js'

/**
 * How a store's memories sit in the `troupe_memories` bucket. Every key begins with the store's id, so all of one store
 * is the one subject wildcard `$KV.troupe_memories.<store>.>` (a store's delete removes it by sequence). No request
 * string is part of a key: memories and versions are keyed by their ids (minted here), paths live in the values.
 *
 *   <store>.m.<memory id>   the memory's head (HeadRecord): its path and times, and its current version's record
 *                           (metadata, no content). Written only by the store's owner, each write at the revision it
 *                           replaces. The head is the commit: one message holds the memory's new state and the version
 *                           that made it, so no crash leaves one without the other.
 *   <store>.c.<version id>  that version's content, raw UTF-8, written (KV create) before the head names it: a crash in
 *                           between leaves bytes nothing names, which are never read (and go with the store).
 *   <store>.v.<version id>  a version the head has moved past (VersionRecord), written (KV create, so a repeat is a
 *                           no-op) just before the head moves, as agents keep theirs; rewritten only by a redaction.
 *
 *   <store>.m.load, <store>.v.load   a mark written before each load of the heads or versions (`latest` says why).
 *
 * A delete writes the head once more as a tombstone (`deleted`, holding the `deleted` version: the commit), then that
 * version's record, then deletes the head (a delete marker). A load that meets a tombstone (a crash in between)
 * finishes those two steps. So every version is either a `v.` record or a head's current version, or both for a moment
 * (the same bytes; readers take either).
 */

export interface VersionRecord {
  id: string
  memory_id: string
  operation: MemoryOperation
  created_at: string
  created_by: MemoryActor
  /** The memory's path as of this version; null once redacted. */
  path: string | null
  /** null on a `deleted` version and once redacted. */
  content_sha256: string | null
  content_size_bytes: number | null
  redacted_at: string | null
  redacted_by: MemoryActor | null
}

export interface HeadRecord {
  id: string
  path: string
  created_at: string
  updated_at: string
  /** The version that made this state. */
  version: VersionRecord
  /** A tombstone: the memory is deleted and `version` is its `deleted` version. */
  deleted?: true
}

/** A head as its owner holds it: the record and the revision its next write must name. */
export interface Head {
  head: HeadRecord
  revision: number
}

const headKey = (store: string, id: string) => `${store}.m.${id}`
const contentKey = (store: string, version: string) => `${store}.c.${version}`
const versionKey = (store: string, version: string) => `${store}.v.${version}`

/** How long a write waits for its acknowledgement (nats.js's JetStream default). */
const WRITE_TIMEOUT_MS = 5000

/** How long a load of a store's records may take before it is given up (a leader moving under the read). */
const LOAD_TIMEOUT_MS = 30_000

/** The store's memory records, read and written by its owner; `serving` is this host's heartbeat fence. */
export class MemoryRecords {
  constructor(
    readonly kv: KV,
    /** The bucket's name (its stream is `KV_<name>`). */
    private readonly bucket: string,
    private readonly js: JetStreamClient,
    /**
     * Whether this host may write for `store` now: it serves the store's partition, a lapsed heartbeat waited out first
     * (the kit's `whenServing`), as the actor's own writes are.
     */
    private readonly serving: (store: string) => boolean | Promise<boolean>,
  ) {}

  /** A version's content; undefined when it has none (deleted, redacted). Any host may read it: it never changes. */
  async content(store: string, version: string): Promise<string | undefined> {
    let e = await this.kv.get(contentKey(store, version))
    // Any replica answers a get, and one behind says "no such key" for one just written: absence is asked of the leader.
    if (e?.operation !== 'PUT') e = await readAtLeader(this.kv, contentKey(store, version))
    return e?.operation === 'PUT' ? e.string() : undefined
  }

  async putContent(store: string, version: string, content: string): Promise<void> {
    await this.fence(store)
    await this.write(contentKey(store, version), Buffer.from(content, 'utf8'), 0).catch(ignoreExisting)
  }

  /** Removes content no version names (a staged content its write did not use). */
  async dropContent(store: string, version: string): Promise<void> {
    await this.fence(store)
    await this.kv.delete(contentKey(store, version))
  }

  /** Stores a version record, unless it is stored already (a write repeated after a crash). */
  async keepVersion(store: string, v: VersionRecord): Promise<void> {
    await this.fence(store)
    await this.write(versionKey(store, v.id), encode(v), 0).catch(ignoreExisting)
  }

  /** The head's new state, at the revision it replaces (0: a new memory); the new revision. */
  async commit(store: string, head: HeadRecord, revision: number): Promise<number> {
    await this.fence(store)
    const bytes = encode(head)
    const key = headKey(store, head.id)
    try {
      return await this.write(key, bytes, revision)
    } catch (err) {
      if (!isCasConflict(err)) throw err
      // A create over a delete marker (a keyed create's id, made again after that memory's delete) names the marker.
      const e = revision === 0 ? await readAtLeader(this.kv, key) : null
      if (e && e.operation !== 'PUT') return this.write(key, bytes, e.revision)
      throw new FenceLost(`${key} was written by another host`)
    }
  }

  /**
   * A KV write as nats.js's bucket makes it (its subject, the compare-and-set header: `expected` is the revision the key
   * must be at, 0 absent), sent through the kit's hot-path publisher: every memory write is one or more of these, one at
   * a time per store. The new revision.
   */
  private async write(key: string, bytes: Uint8Array, expected: number): Promise<number> {
    const h = headers()
    h.set(PubHeaders.ExpectedLastSubjectSequenceHdr, String(expected))
    const nc = (this.kv as unknown as { js: { nc: NatsConnection } }).js.nc
    return (await jsPublisher(nc).publish(`$KV.${this.bucket}.${key}`, bytes, h, WRITE_TIMEOUT_MS)).seq
  }

  /** Removes a tombstone once its version has its record (a delete marker: the bucket keeps one message per key). */
  async dropHead(store: string, id: string, revision: number): Promise<void> {
    await this.fence(store)
    await this.kv.delete(headKey(store, id), { previousSeq: revision }).catch((err) => {
      if (!isCasConflict(err)) throw err
    })
  }

  /** Clears a version: its record rewritten as given (redacted), its content removed. */
  async redact(store: string, v: VersionRecord, hadContent: boolean): Promise<void> {
    await this.fence(store)
    await this.keepVersion(store, v)
    const e = await readAtLeader(this.kv, versionKey(store, v.id))
    if (e?.operation !== 'PUT') throw new Error(`${versionKey(store, v.id)} is missing after it was written`)
    await this.kv.update(versionKey(store, v.id), encode(v), e.revision).catch((err) => {
      if (isCasConflict(err)) throw new FenceLost(`${versionKey(store, v.id)} was written by another host`)
      throw err
    })
    // A delete marker: with one message kept per key, the content's message is gone from the stream with it.
    if (hadContent) await this.kv.delete(contentKey(store, v.id))
  }

  /** Every head of the store (tombstones finished on the way: their version recorded, the head deleted). */
  async loadHeads(store: string): Promise<Head[]> {
    const heads: Head[] = []
    for (const { value, seq } of await this.latest(store, 'm')) {
      const head = decode<HeadRecord>(value)
      if (!head.deleted) {
        heads.push({ head, revision: seq })
        continue
      }
      await this.keepVersion(store, head.version)
      await this.dropHead(store, head.id, seq)
    }
    return heads
  }

  /** Every version record of the store. */
  async loadVersions(store: string): Promise<VersionRecord[]> {
    return (await this.latest(store, 'v')).map((m) => decode<VersionRecord>(m.value))
  }

  private async fence(store: string): Promise<void> {
    if (!(await this.serving(store)))
      throw new NotServing(`memory_store ${store}: this host's heartbeat lapsed; it writes nothing until it re-reads its partitions`)
  }

  /**
   * The current value of every key under `<store>.<kind>.`, through one ordered consumer (last per subject). nats-server
   * 2.9 may place that consumer on a replica that is behind, which would hide the newest heads (and a path in use with
   * them), so a mark is written under the same prefix first (`<store>.<kind>.load`, never a memory's or a version's
   * id) and the read counts only once it delivered that write: a replica applies the stream in order, so one that has
   * it has everything written before. Delete markers and the mark are left out.
   */
  private async latest(store: string, kind: 'm' | 'v'): Promise<Array<{ value: Uint8Array; seq: number }>> {
    await this.fence(store)
    const mark = `${store}.${kind}.load`
    const seq = await this.kv.put(mark, new Uint8Array(0))
    const deadline = Date.now() + LOAD_TIMEOUT_MS
    for (let attempt = 0; ; attempt++) {
      const out = await this.read(`$KV.${this.bucket}.${store}.${kind}.>`, `$KV.${this.bucket}.${mark}`, seq, deadline)
      if (out) return out
      if (Date.now() > deadline) throw new TimeoutError()
      await new Promise((r) => setTimeout(r, Math.min(50 * 2 ** attempt, 1000)))
    }
  }

  /** One read of `filter`'s last values; undefined when it did not reach `markSubject`'s message `markSeq`. */
  private async read(filter: string, markSubject: string, markSeq: number, deadline: number): Promise<Array<{ value: Uint8Array; seq: number }> | undefined> {
    const consumer = await this.js.consumers.get(`KV_${this.bucket}`, {
      filter_subjects: filter,
      deliver_policy: DeliverPolicy.LastPerSubject,
      inactive_threshold: 30_000,
    })
    const out: Array<{ value: Uint8Array; seq: number; subject: string }> = []
    try {
      await this.drain(consumer, (await consumer.info(true)).num_pending, deadline, out)
    } finally {
      // Not left to the server's inactivity sweep: a host loading many stores would hold a consumer per store meanwhile.
      consumer.delete().catch(() => undefined)
    }
    if (!out.some((m) => m.subject === markSubject && m.seq >= markSeq)) return undefined
    return out.filter((m) => m.subject !== markSubject)
  }

  private async drain(consumer: Consumer, pending: number, deadline: number, out: Array<{ value: Uint8Array; seq: number; subject: string }>): Promise<void> {
    while (pending > 0) {
      if (Date.now() > deadline) throw new TimeoutError()
      const batch = await consumer.fetch({ max_messages: Math.min(pending, 1024), expires: 5000 })
      let got = 0
      for await (const m of batch) {
        got++
        pending = m.info.pending
        const op = m.headers?.get('KV-Operation')
        if (op === 'DEL' || op === 'PURGE') continue
        out.push({ value: m.data, seq: m.seq, subject: m.subject })
        if (pending === 0) break
      }
      batch.stop()
      // Said to be pending, yet nothing came: a replica behind ended the read early. A short list would hide memories.
      if (!got) throw new TimeoutError()
    }
  }
}

const ignoreExisting = (err: unknown) => {
  if (!isCasConflict(err)) throw err
}
