import { fail } from '../../protocol/errors/fail.js'
import { newId } from '../../protocol/ids.js'
import { contentSha256 } from '../../protocol/memory-rules.js'
import type { MemoryActor } from '../../protocol/schemas/memory.js'
import { now } from '../../protocol/time.js'
import type { LoadedStore } from './loaded.js'
import type { Head, HeadRecord, MemoryRecords, VersionRecord } from './records.js'

/**
 * The three writes of a memory, each run by the store's owner inside one exclusive op of its actor (so each path and
 * each precondition is decided by exactly one writer, on whatever host the request came in), each committed by one
 * head write (records.ts says why that makes the state and its version one step). The tree and the history change only
 * once the commit is stored; a failure before stops the actor, which loads the store again.
 */
export class MemoryWrites {
  constructor(private readonly records: MemoryRecords) {}

  /**
   * A new memory at `path` (free: checked here); `id` when the create's Idempotency-Key chose it, `staged` when its
   * content was stored already under that version id (staging.ts).
   */
  async create(store: LoadedStore, path: string, content: string, by: MemoryActor, o: { field?: string; id?: string; staged?: string } = {}): Promise<Head> {
    const id = o.id ?? newId('mem')
    this.free(store, path, undefined, o.field ?? 'path')
    const t = now()
    const version = this.version(id, 'created', path, content, by, t, o.staged)
    if (!o.staged) await this.records.putContent(store.id, version.id, content)
    const head: HeadRecord = { id, path, created_at: t, updated_at: t, version }
    return this.committed(store, head, await this.records.commit(store.id, head, 0))
  }

  /**
   * A memory's new content and/or path; the head as it is when neither changes (no version: nothing changed). The
   * content of a rename alone is copied to the new version, which owns its bytes (a redaction of either leaves the other).
   */
  async modify(
    store: LoadedStore,
    cur: Head,
    change: { content?: string; path?: string },
    by: MemoryActor,
    o: { field?: string; staged?: string } = {},
  ): Promise<Head> {
    const path = change.path ?? cur.head.path
    const sha = change.content === undefined ? cur.head.version.content_sha256 : contentSha256(change.content)
    if (path === cur.head.path && sha === cur.head.version.content_sha256) return cur
    if (path !== cur.head.path) this.free(store, path, cur.head.id, o.field ?? 'path')
    const content = change.content ?? (await this.records.content(store.id, cur.head.version.id))
    if (content === undefined) throw new Error(`memory ${cur.head.id}: the content of its current version ${cur.head.version.id} is missing`)
    const t = now()
    const version = this.version(cur.head.id, 'modified', path, content, by, t, change.content === undefined ? undefined : o.staged)
    // Both before the head names the new version and moves past the old one; neither depends on the other.
    await Promise.all([
      version.id === o.staged ? undefined : this.records.putContent(store.id, version.id, content),
      this.records.keepVersion(store.id, cur.head.version),
    ])
    const head: HeadRecord = { ...cur.head, path, updated_at: t, version }
    return this.committed(store, head, await this.records.commit(store.id, head, cur.revision), cur.head.version)
  }

  /** Deletes a memory: its tombstone is the commit; its `deleted` version's record and the head's removal follow. */
  async remove(store: LoadedStore, cur: Head, by: MemoryActor): Promise<void> {
    const t = now()
    const version: VersionRecord = {
      id: newId('memver'),
      memory_id: cur.head.id,
      operation: 'deleted',
      created_at: t,
      created_by: by,
      path: cur.head.path,
      content_sha256: null,
      content_size_bytes: null,
      redacted_at: null,
      redacted_by: null,
    }
    await this.records.keepVersion(store.id, cur.head.version)
    const tomb: HeadRecord = { ...cur.head, updated_at: t, version, deleted: true }
    const revision = await this.records.commit(store.id, tomb, cur.revision)
    store.tree.remove(cur.head.id)
    const history = await store.ifLoaded()
    history?.put(cur.head.version)
    history?.put(version)
    // Done: the memory is deleted. What follows only tidies, and a load finishes it if it fails or a crash cuts it short.
    try {
      await this.records.keepVersion(store.id, version)
      await this.records.dropHead(store.id, cur.head.id, revision)
    } catch {}
  }

  /** Refuses a path another memory holds or overlaps (409 naming it). */
  private free(store: LoadedStore, path: string, self: string | undefined, field: string): void {
    const other = store.tree.conflict(path, self)
    if (other) throw fail('memory_path_conflict', field, path, other.head.path, other.head.id)
  }

  private version(memory: string, operation: 'created' | 'modified', path: string, content: string, by: MemoryActor, t: string, id?: string): VersionRecord {
    return {
      id: id ?? newId('memver'),
      memory_id: memory,
      operation,
      created_at: t,
      created_by: by,
      path,
      content_sha256: contentSha256(content),
      content_size_bytes: Buffer.byteLength(content, 'utf8'),
      redacted_at: null,
      redacted_by: null,
    }
  }

  /**
   * The tree and, when loaded, the history after a commit. The version moved past goes into the history too: a history
   * loading meanwhile may have read the store's version records before its record was written.
   */
  private async committed(store: LoadedStore, head: HeadRecord, revision: number, movedPast?: VersionRecord): Promise<Head> {
    const h = { head, revision }
    store.tree.put(h)
    const history = await store.ifLoaded()
    if (movedPast) history?.put(movedPast)
    history?.put(head.version)
    return h
  }
}
