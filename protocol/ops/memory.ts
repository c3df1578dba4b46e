import type { Page } from '../page.js'
import {
  type Memory,
  MemoryApplyInput,
  MemoryCreate,
  MemoryDeleteQuery,
  MemoryIndexInput,
  MemoryListQuery,
  type MemoryPrefix,
  type MemoryStore,
  MemoryStoreAttachInput,
  MemoryStoreCreate,
  MemoryStoreListQuery,
  MemoryStoreUpdate,
  MemoryUpdate,
  type MemoryVersion,
  MemoryVersionListQuery,
  MemoryViewQuery,
} from '../schemas/memory.js'
import { MemoryStoreHoldInput } from '../schemas/dream.js'
import { defineKind, type IdSpec, returns } from './define.js'

/** A memory, named beside its store (WIRE §16). */
const MemoryIdSpec: IdSpec = { param: 'memory_id', prefix: 'mem', noun: 'Memory' }
/** A memory version, named beside its store. */
const VersionIdSpec: IdSpec = { param: 'memory_version_id', prefix: 'memver', noun: 'Memory version' }

/** One memory of a store as a session's materialisation reads it: no content (read by version, `MemoryContents`). */
export interface MemoryEntry {
  id: string
  path: string
  content_sha256: string
  content_size_bytes: number
  memory_version_id: string
}

/**
 * A store's memories for a session's mount, and the token naming them (`LoadedStore.token`): `memories` is absent
 * when the token is the one the mount sent (nothing changed since).
 */
export interface MemoryIndex {
  token: string
  memories?: MemoryEntry[]
}

/** What each change of `memories.apply` did: the memory as it now is (basic view), or why it was not stored. */
export type MemoryApplied = { ok: true; memory: Memory | null } | { ok: false; path: string; code: string; message: string }

/**
 * Memory stores, their memories and versions. Creates and lists of stores go to any host; everything about one store
 * (the store itself, its memories and versions, sessions' attachments) to the host owning its partition, where it is
 * one durable-state actor whose exclusive ops decide every path and precondition one at a time.
 */
export const MemoryStoreKind = defineKind(
  'memory_store',
  { param: 'memory_store_id', prefix: 'memstore', noun: 'Memory store' },
  {
    create: { placement: 'any', body: MemoryStoreCreate, reply: returns<MemoryStore>() },
    list: { placement: 'any', query: MemoryStoreListQuery, reply: returns<Page<MemoryStore>>() },
    get: { placement: 'owner', reply: returns<MemoryStore>() },
    update: { placement: 'owner', body: MemoryStoreUpdate, reply: returns<MemoryStore>() },
    archive: { placement: 'owner', reply: returns<MemoryStore>() },
    /** Deletes the store, its memories and versions (409 while a session that is not deleted has it attached). */
    delete: { placement: 'owner', reply: returns<{ id: string; type: 'memory_store_deleted' }>() },
    /** Internal (sessions): a session attaches the store at its creation (refused when archived); the store as it is. */
    attach: { placement: 'owner', body: MemoryStoreAttachInput, reply: returns<MemoryStore>() },
    /**
     * Internal (dreams): an `update_existing` dream holds the store while it runs; a second dream is 409 `conflict_error`.
     * Decided in the store's actor, one op at a time, so of two dreams on any hosts exactly one holds it.
     */
    hold: { placement: 'owner', body: MemoryStoreHoldInput, reply: returns<MemoryStore>() },
    /** Internal (dreams): the dream that held the store lets it go (nothing when another holds it). */
    release: { placement: 'owner', body: MemoryStoreHoldInput, reply: returns<{ held_by: string | null }>() },
    /** Internal (sessions): a deleted session lets the store go. */
    detach: { placement: 'owner', body: MemoryStoreAttachInput, reply: returns<{ attached: number }>() },
    'memories.create': { placement: 'owner', body: MemoryCreate, query: MemoryViewQuery, reply: returns<Memory>() },
    'memories.list': { placement: 'owner', query: MemoryListQuery, reply: returns<Page<Memory | MemoryPrefix>>() },
    'memories.get': { placement: 'owner', sub: MemoryIdSpec, query: MemoryViewQuery, reply: returns<Memory>() },
    'memories.update': { placement: 'owner', sub: MemoryIdSpec, body: MemoryUpdate, query: MemoryViewQuery, reply: returns<Memory>() },
    'memories.delete': { placement: 'owner', sub: MemoryIdSpec, query: MemoryDeleteQuery, reply: returns<{ id: string; type: 'memory_deleted' }>() },
    /** Internal (sessions): the changes of one tool call, each a version by `session_actor`. */
    /**
     * Internal (sessions): the changes of one tool call, each a version by `session_actor`; with the store's index token
     * before and after them (equal `before` and the mount's own token: no one else wrote in between).
     */
    'memories.apply': {
      placement: 'owner',
      body: MemoryApplyInput,
      reply: returns<{ results: MemoryApplied[]; before: string; after: string }>(),
    },
    /** Internal (sessions): every memory of the store, without content, to materialise it; nothing when unchanged `since`. */
    'memories.index': { placement: 'owner', body: MemoryIndexInput, reply: returns<MemoryIndex>() },
    'versions.list': { placement: 'owner', query: MemoryVersionListQuery, reply: returns<Page<MemoryVersion>>() },
    'versions.get': { placement: 'owner', sub: VersionIdSpec, query: MemoryViewQuery, reply: returns<MemoryVersion>() },
    'versions.redact': { placement: 'owner', sub: VersionIdSpec, reply: returns<MemoryVersion>() },
  },
)
