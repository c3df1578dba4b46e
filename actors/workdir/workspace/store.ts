import { createHash } from 'node:crypto'
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream'
import { nuid } from '@nats-io/nats-core'
import type { ObjectStore } from '@nats-io/obj'
import { ObjectStores, objectChunkPrefix, objectMetaSubject, objectStream } from '../../../protocol/subjects.js'
import {
  CHUNK_BYTES,
  clearSubject,
  FenceLost,
  isCasConflict,
  isOutcomeUnknown,
  isTransientNatsError,
  ObjectWrites,
  paddedDigest,
  readChunks,
} from '../../kit/index.js'

const STORE = ObjectStores.workspaces
const STREAM = objectStream(STORE)
const CHUNKS = objectChunkPrefix(STORE)

/**
 * Where one version of one file's bytes is: chunks on `$O.troupe_workspaces.C.<session>.<id>`, in order. The id is
 * `<gen>-<nuid>`, `gen` the manifest generation the save that wrote it was making (see `strays`).
 */
export interface BlobRef {
  id: string
  size: number
  chunks: number
  /** `SHA-256=` and the padded base64url digest, as nats.js writes an object's. */
  digest: string
}

/**
 * A session's manifest as stored: its bytes (or why they cannot be read: a chunk gone), the blob holding them, and the
 * revision a commit over it must name.
 */
export interface StoredManifest {
  bytes?: Uint8Array
  unreadable?: string
  blob: string
  revision: number
}

/**
 * Sessions' workspaces in the `troupe_workspaces` object store, laid out so that a session's bytes are one wildcard: the
 * manifest is an object named by the session id (its meta entry written last, as nats.js does, so `nats obj get
 * troupe_workspaces <session>` reads it), whose chunks, like every saved file version's, are on a subject of the
 * session's own (`$O.troupe_workspaces.C.<session>.<nuid>`). File versions are not objects: only the manifest names
 * them. A commit is the manifest's meta entry, written at the revision it replaces, so of two hosts that both believe
 * they hold the session exactly one commits. Nothing is purged: what goes is deleted by sequence (kit/object-writes.ts).
 */
export class WorkspaceStore {
  private readonly writes: ObjectWrites

  constructor(
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    private readonly os: ObjectStore,
  ) {
    this.writes = new ObjectWrites(js, STORE)
  }

  /** The session's stored manifest; undefined when it has none. */
  async manifest(session: string): Promise<StoredManifest | undefined> {
    const info = await this.os.info(session)
    if (!info || info.deleted) return undefined
    const blob = info.nuid.slice(session.length + 1)
    const parts: Uint8Array[] = []
    try {
      for await (const c of readChunks(this.jsm, STREAM, CHUNKS + info.nuid, info.chunks, info.digest, 'leader if missing')) parts.push(c)
    } catch (err) {
      if (isTransientNatsError(err)) throw err
      return { unreadable: (err as Error).message, blob, revision: info.revision }
    }
    return { bytes: Buffer.concat(parts), blob, revision: info.revision }
  }

  /** Stores `data` (read as it is published, one chunk in flight) as a new blob of the session, for generation `gen`. */
  async putBlob(session: string, gen: number, data: AsyncIterable<Uint8Array> | Iterable<Uint8Array>): Promise<BlobRef> {
    const id = `${gen}-${nuid.next()}`
    const subject = `${CHUNKS}${session}.${id}`
    const sha = createHash('sha256')
    let size = 0
    let chunks = 0
    let pending = Buffer.alloc(0)
    const send = async (payload: Uint8Array) => {
      sha.update(payload)
      size += payload.length
      chunks++
      await this.js.publish(subject, payload)
    }
    try {
      for await (const piece of data) {
        pending = pending.length ? Buffer.concat([pending, piece]) : Buffer.from(piece)
        while (pending.length >= CHUNK_BYTES) {
          await send(pending.subarray(0, CHUNK_BYTES))
          pending = pending.subarray(CHUNK_BYTES)
        }
      }
      if (pending.length) await send(pending)
    } catch (err) {
      await this.dropBlobs(session, [id]).catch(() => undefined)
      throw err
    }
    return { id, size, chunks, digest: paddedDigest(sha.digest('base64url')) }
  }

  /** A blob's bytes, chunk by chunk (at the stream's leader when a replica has a chunk not); throws when a chunk is missing or the digest differs. */
  readBlob(session: string, ref: BlobRef): AsyncGenerator<Uint8Array> {
    return readChunks(this.jsm, STREAM, `${CHUNKS}${session}.${ref.id}`, ref.chunks, ref.digest, 'leader if missing')
  }

  /**
   * Makes `bytes` (generation `gen`) the session's manifest, if the stored one is still at `revision` (0: none yet);
   * FenceLost when it moved on. Returns the new revision and the blob holding the bytes.
   */
  async commit(session: string, gen: number, bytes: Uint8Array, revision: number): Promise<{ revision: number; blob: string }> {
    const blob = await this.putBlob(session, gen, [bytes])
    const meta = {
      name: session,
      bucket: STORE,
      nuid: `${session}.${blob.id}`,
      size: blob.size,
      chunks: blob.chunks,
      digest: blob.digest,
      mtime: new Date().toISOString(),
      deleted: false,
      options: { max_chunk_size: CHUNK_BYTES },
    }
    try {
      // The manifests before it go by sequence; their blobs are the caller's to drop.
      return { revision: await this.writes.writeMeta(meta, { revision, superseded: 'entries' }), blob: blob.id }
    } catch (err) {
      // A commit whose answer was lost may have landed: its bytes stay (the caller looks).
      if (!isOutcomeUnknown(err)) await this.dropBlobs(session, [blob.id]).catch(() => undefined)
      if (isCasConflict(err)) throw new FenceLost(`session ${session}: its workspace manifest moved on (another host saved it)`)
      throw err
    }
  }

  /** Removes blobs of the session (file versions no manifest names any more). */
  async dropBlobs(session: string, ids: Iterable<string>): Promise<void> {
    for (const id of ids) await clearSubject(this.jsm, STREAM, `${CHUNKS}${session}.${id}`)
  }

  /**
   * The session's blobs written for generation `gen` or before that `live` (generation `gen`'s) does not name: left by a
   * save that never committed (its host died midway). A blob of a later generation is never one: it is another host's
   * save in progress, or committed after this one, which a host that was paused since must not take for garbage.
   */
  async strays(session: string, gen: number, live: ReadonlySet<string>): Promise<string[]> {
    const prefix = `${CHUNKS}${session}.`
    const si = await this.jsm.streams.info(STREAM, { subjects_filter: `${prefix}>` })
    return Object.keys(si.state.subjects ?? {})
      .map((s) => s.slice(prefix.length))
      .filter((id) => !live.has(id) && Number(id.split('-', 1)[0]) <= gen)
  }

  /** Everything of the session: its manifest first (the workspace is gone for readers), then every blob. */
  async remove(session: string): Promise<void> {
    await clearSubject(this.jsm, STREAM, objectMetaSubject(STORE, session))
    await clearSubject(this.jsm, STREAM, `${CHUNKS}${session}.>`)
  }
}
