import type { Memory, MemoryActor, MemoryStore, MemoryVersion } from '../../protocol/schemas/memory.js'
import type { HeadRecord, VersionRecord } from './records.js'

/**
 * How stores sit in their bucket:
 *
 *   troupe_memory_stores  memory_store.<id>  the store's state (below): the actor's record (the kit's `<kind>.<id>`),
 *                                            written only by the owner of its partition, fenced by its revision; a
 *                                            create (any host) is the one write that makes it.
 *                         work.<id>          while a deleted store's memories are being removed.
 *
 * A store's memories are not in its state: they are records of their own in `troupe_memories` (records.ts), which
 * only this store's owner writes, so the state stays small whatever the store holds.
 */
export interface StoreState {
  store: MemoryStore
  /** Fingerprint of the create request, when it carried an Idempotency-Key: its retries must match it. */
  created_by?: string
  /** Sessions that attached the store and are not deleted (issue 42 point 4 registers them): a delete waits for them. */
  sessions: string[]
  /** When each of `sessions` attached (absent for attachments older than this field): a stale one is found by asking. */
  attached_at?: Record<string, string>
  /**
   * The `update_existing` dream that holds the store while it runs (issue 42 point 5), and since when: a second such
   * dream is refused until the holder lets go. A holder found gone (never stored, or no longer holding) is replaced.
   */
  dream?: { id: string; at: string }
  /** Deleted: the store answers 404 from here; its memories are removed as work, then `cleared`. */
  deleted_at?: string
  cleared?: true
}

export const STORE_PREFIX = 'memory_store.'

/**
 * Who the API's writes are made by. Troupe checks no API key (README "Strict mode"), so every API write is this one
 * `api_actor`; sessions' writes name the session.
 */
export const API_ACTOR: MemoryActor = { type: 'api_actor', api_key_id: 'apikey_troupe' }

export const sessionActor = (session_id: string): MemoryActor => ({ type: 'session_actor', session_id })

export const memoryView = (store: string, h: HeadRecord, content: string | null): Memory => ({
  id: h.id,
  type: 'memory',
  memory_store_id: store,
  path: h.path,
  content,
  content_sha256: h.version.content_sha256!,
  content_size_bytes: h.version.content_size_bytes!,
  memory_version_id: h.version.id,
  created_at: h.created_at,
  updated_at: h.updated_at,
})

export const versionView = (store: string, v: VersionRecord, content: string | null): MemoryVersion => ({
  id: v.id,
  type: 'memory_version',
  memory_id: v.memory_id,
  memory_store_id: store,
  operation: v.operation,
  created_at: v.created_at,
  content,
  content_sha256: v.content_sha256,
  content_size_bytes: v.content_size_bytes,
  path: v.path,
  created_by: v.created_by,
  redacted_at: v.redacted_at,
  redacted_by: v.redacted_by,
})

/** Whether a version has content to read (not deleted, not redacted). */
export const hasContent = (v: VersionRecord) => v.content_sha256 !== null
