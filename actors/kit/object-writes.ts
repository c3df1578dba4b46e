import { createHash } from 'node:crypto'
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream'
import { nuid } from '@nats-io/nats-core'
import { objectChunkPrefix, objectMetaSubject, objectStream } from '../../protocol/subjects.js'
import { isOutcomeUnknown } from './nats-errors.js'
import { CHUNK_BYTES } from './object-stores.js'
import { clearSubject, deleteSequences, messagesAtLeader } from './sequence-deletes.js'

/**
 * An object's meta entry as nats.js's object store writes and reads it (`ServerObjectInfo`, JSON on
 * `$O.<store>.M.<name in padded base64url>`); its chunks are the messages on `$O.<store>.C.<nuid>`, in order.
 */
export interface ObjectMeta {
  name: string
  bucket: string
  nuid: string
  size: number
  chunks: number
  mtime: string
  /** `SHA-256=` and the padded base64url digest of the whole object; empty when deleted. */
  digest: string
  deleted?: boolean
  description?: string
  options?: { max_chunk_size?: number }
  headers?: Record<string, string[]>
  metadata?: Record<string, string>
}

/** A meta entry as stored: `revision` is its stream sequence (nats.js's `ObjectInfo.revision`). */
export interface StoredObject extends ObjectMeta {
  revision: number
}

/** Which of the entries before a new meta entry go once it is written: only those entries, or with their chunks too. */
export type Superseded = 'entries' | 'entries and chunks'

/** `SHA-256=` and the digest in padded base64url, as nats.js writes an object's. */
export const paddedDigest = (b64url: string): string => `SHA-256=${b64url}${'='.repeat((4 - (b64url.length % 4)) % 4)}`

/**
 * Puts and deletes of objects in one of our object stores, in nats.js's stored format (its `info`, `list` and `get`
 * read them as their own) but never purging a subject (kit/sequence-deletes.ts says why). nats.js writes meta entries
 * with `Nats-Rollup: sub` and purges an object's chunks on a put over its name and on a delete; here a meta entry is a
 * plain message and what it supersedes is deleted by sequence afterwards: the earlier entries of the name, and the
 * chunks they named.
 *
 * Every step leaves something a reader takes right: readers take a name's last meta entry (`last_by_subj`; nats.js's
 * `list` delivers the last per subject), so an earlier entry a crash left beside a newer one is never read, and the
 * next write of the name deletes it with its chunks. Chunks no meta entry names (a put that died midway, a delete cut
 * short) are what the orphan sweeps remove (actors/file/sweep.ts; the workspaces' strays).
 */
export class ObjectWrites {
  readonly stream: string
  private readonly chunkPrefix: string
  private jsm: Promise<JetStreamManager> | undefined

  constructor(
    private readonly js: JetStreamClient,
    /** The object store's name (its stream is `OBJ_<store>`). */
    readonly store: string,
  ) {
    this.stream = objectStream(store)
    this.chunkPrefix = objectChunkPrefix(store)
  }

  /** The name's last meta entry (a deleted object's too) as the stream's leader holds it; undefined when there is none. */
  async meta(name: string): Promise<StoredObject | undefined> {
    const m = await (await this.manager()).streams.getMessage(this.stream, { last_by_subj: objectMetaSubject(this.store, name) })
    return m ? { ...m.json<ObjectMeta>(), revision: m.seq } : undefined
  }

  /**
   * Stores `body` (read as it is published, one chunk in flight) as the object `name`, replacing any object of that
   * name: new chunks, then the meta entry, then what it supersedes goes by sequence (a failure there is left to the next
   * write of the name or the sweep: the put is done). A put that fails removes the chunks it wrote, unless its meta
   * entry may have landed (no answer): then they stay, and the sweep takes them if it did not.
   */
  async put(
    name: string,
    body: ReadableStream<Uint8Array> | AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
    chunkBytes = CHUNK_BYTES,
  ): Promise<StoredObject> {
    const id = nuid.next()
    const subject = this.chunkPrefix + id
    const sha = createHash('sha256')
    const seqs: number[] = []
    let size = 0
    let pending = Buffer.alloc(0)
    const send = async (payload: Uint8Array) => {
      sha.update(payload)
      size += payload.length
      seqs.push((await this.js.publish(subject, payload)).seq)
    }
    let meta: ObjectMeta | undefined
    try {
      for await (const piece of piecesOf(body)) {
        pending = pending.length ? Buffer.concat([pending, piece]) : Buffer.from(piece)
        while (pending.length >= chunkBytes) {
          await send(pending.subarray(0, chunkBytes))
          pending = pending.subarray(chunkBytes)
        }
      }
      if (pending.length) await send(pending)
      meta = {
        name,
        bucket: this.store,
        nuid: id,
        size,
        chunks: seqs.length,
        description: '',
        options: { max_chunk_size: chunkBytes },
        mtime: new Date().toISOString(),
        digest: paddedDigest(sha.digest('base64url')),
        deleted: false,
      }
      const revision = await this.writeMeta(meta, { superseded: 'entries and chunks' })
      return { ...meta, revision }
    } catch (err) {
      if (!(meta && isOutcomeUnknown(err))) await deleteSequences(await this.manager(), this.stream, seqs).catch(() => undefined)
      throw err
    }
  }

  /**
   * Deletes the object `name` as nats.js does (a meta entry saying `deleted`, which its `info`, `list` and `get` take
   * as gone), then its chunks and the name's earlier entries, by sequence. False when there is no such object. A delete
   * of an object already deleted writes nothing new but finishes what an interrupted one left.
   */
  async delete(name: string): Promise<boolean> {
    const info = await this.meta(name)
    if (!info) return false
    const { revision, ...meta } = info
    const at = info.deleted ? revision : await this.writeMeta({ ...meta, deleted: true, size: 0, chunks: 0, digest: '' })
    await clearSubject(await this.manager(), this.stream, this.chunkPrefix + info.nuid)
    await this.supersede(name, at, 'entries and chunks')
    return true
  }

  /**
   * Writes a meta entry (no rollup header), at `revision` if given (the name's last entry must be that one; 0: none),
   * and returns its sequence; then the entries before it go, with their chunks if `superseded` says so (default: no
   * entry goes). What is left of that after a failure is harmless (see the class) and not reported: the write is done.
   */
  async writeMeta(meta: ObjectMeta, opts: { revision?: number; superseded?: Superseded } = {}): Promise<number> {
    const subject = objectMetaSubject(this.store, meta.name)
    const expect = opts.revision === undefined ? undefined : { lastSubjectSequence: opts.revision }
    const ack = await this.js.publish(subject, JSON.stringify(meta), expect && { expect })
    if (opts.superseded) await this.supersede(meta.name, ack.seq, opts.superseded, meta.nuid).catch(() => undefined)
    return ack.seq
  }

  /** Deletes the name's meta entries before sequence `before`, each after the chunks it names (but `live`'s) when asked. */
  async supersede(name: string, before: number, what: Superseded, live?: string): Promise<void> {
    const jsm = await this.manager()
    const older: Array<{ seq: number; nuid: string }> = []
    for await (const m of messagesAtLeader(jsm, this.stream, objectMetaSubject(this.store, name))) {
      if (m.seq >= before) break
      older.push({ seq: m.seq, nuid: m.json<ObjectMeta>().nuid })
    }
    const cleared = new Set([live])
    for (const o of older) {
      if (what === 'entries and chunks' && !cleared.has(o.nuid)) await clearSubject(jsm, this.stream, this.chunkPrefix + o.nuid)
      cleared.add(o.nuid)
      await deleteSequences(jsm, this.stream, [o.seq])
    }
  }

  private manager(): Promise<JetStreamManager> {
    this.jsm ??= this.js.jetstreamManager(false).catch((err) => {
      this.jsm = undefined
      throw err
    })
    return this.jsm
  }
}

/** A body's pieces; a stream is read without being cancelled on a failure, as nats.js reads one (its source decides). */
async function* piecesOf(body: ReadableStream<Uint8Array> | AsyncIterable<Uint8Array> | Iterable<Uint8Array>): AsyncGenerator<Uint8Array> {
  if (!(body instanceof ReadableStream)) return yield* body
  const reader = body.getReader()
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) return
      if (value?.length) yield value
    }
  } finally {
    reader.releaseLock()
  }
}
