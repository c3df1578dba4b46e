import { decodeCursor, encodeCursor } from '../../protocol/cursor.js'
import { fail } from '../../protocol/errors/fail.js'
import { idFromKey } from '../../protocol/ids.js'
import { contentSha256, memoryContentProblem, memoryPathProblem } from '../../protocol/memory-rules.js'
import type { MemoryApplied, MemoryStoreKind } from '../../protocol/ops/memory.js'
import type { Memory, MemoryActor, MemoryChange, MemoryPrefix } from '../../protocol/schemas/memory.js'
import { isApiError } from '../../protocol/errors/api-error.js'
import type { DurableState } from '../kit/index.js'
import type { LoadedStore, LoadedStores } from './loaded.js'
import type { Head, MemoryRecords } from './records.js'
import { API_ACTOR, memoryView, sessionActor, type StoreState } from './state.js'
import type { TreePosition } from './tree.js'
import type { MemoryWrites } from './writes.js'
import type { Staging } from './staging.js'

/** A page of `view=full` holds at most this many (the vendor's cap). */
export const FULL_PAGE = 20

/** The store answers 404 once deleted. */
export const live = (s: StoreState) => {
  if (s.deleted_at) throw fail('memory_store_not_found', s.store.id)
}

/** Memories are created and changed only in a store that is not archived. */
const writable = (s: StoreState) => {
  live(s)
  if (s.store.archived_at) throw fail('memory_store_read_only', s.store.id)
}

const isTreePosition = (a: unknown): a is TreePosition =>
  typeof a === 'object' &&
  a !== null &&
  typeof (a as TreePosition).p === 'string' &&
  (a as TreePosition).p.length <= 2048 &&
  [0, 1].includes((a as TreePosition).k)

/** The memory ops of a store, on its owner: writes exclusive (one at a time per store), reads beside them. */
export function memoryOps(
  states: DurableState<StoreState, typeof MemoryStoreKind>,
  loaded: LoadedStores,
  records: MemoryRecords,
  writes: MemoryWrites,
  staging: Staging,
) {
  const at = (s: StoreState, self: { activation: number }) => loaded.get(s.store.id, self.activation)
  const find = (store: LoadedStore, id: string): Head => {
    const h = store.tree.get(id)
    if (!h) throw fail('memory_not_found', id, store.id)
    return h
  }
  const view = async (store: string, h: Head, full: boolean): Promise<Memory> =>
    memoryView(store, h.head, full ? ((await records.content(store, h.head.version.id)) ?? '') : null)

  const ops = states.ops({
    'memories.create': async (s, input, self) => {
      const { body, query, key } = input
      writable(s)
      const store = await at(s, self)
      // A retry of a create with the same Idempotency-Key answers the memory its first attempt made.
      const id = key === undefined ? undefined : idFromKey('mem', 'memory_stores.memories.create', `${s.store.id}\n${key}`)
      const made = (id && store.tree.get(id)) || (await writes.create(store, body.path, body.content ?? '', API_ACTOR, { id, staged: staging.of(input) }))
      return { reply: await view(s.store.id, made, query.view === 'full') }
    },

    'memories.update': async (s, input, self) => {
      const { sub, body, query } = input
      writable(s)
      const store = await at(s, self)
      const cur = find(store, sub)
      const change = { ...(body.content == null ? {} : { content: body.content }), ...(body.path == null ? {} : { path: body.path }) }
      const expected = body.precondition?.content_sha256
      if (expected !== undefined && expected !== cur.head.version.content_sha256) {
        // The client's rule: a memory that already has exactly the requested content and path succeeds anyway.
        const same =
          (change.path ?? cur.head.path) === cur.head.path &&
          (change.content === undefined || contentSha256(change.content) === cur.head.version.content_sha256)
        if (!same) throw fail('memory_precondition_failed', 'precondition.content_sha256', cur.head.id)
      }
      const next = await writes.modify(store, cur, change, API_ACTOR, { staged: staging.of(input) })
      return { reply: await view(s.store.id, next, query.view === 'full') }
    },

    'memories.delete': async (s, { sub, query }, self) => {
      // An archived store's memories can still be deleted (the client's docs).
      live(s)
      const store = await at(s, self)
      const cur = find(store, sub)
      if (query.expected_content_sha256 !== undefined && query.expected_content_sha256 !== cur.head.version.content_sha256)
        throw fail('memory_precondition_failed', 'expected_content_sha256', cur.head.id)
      await writes.remove(store, cur, API_ACTOR)
      return { reply: { id: cur.head.id, type: 'memory_deleted' as const } }
    },

    'memories.apply': async (s, { body }, self) => {
      writable(s)
      const store = await at(s, self)
      const by = sessionActor(body.session_id)
      const before = store.token
      const results: MemoryApplied[] = []
      for (const c of body.changes) results.push(await applyOne(store, c, by))
      return { reply: { results, before, after: store.token } }
    },

    'memories.get': {
      shared: async (s, { sub, query }, self) => {
        live(s)
        return view(s.store.id, find(await at(s, self), sub), query.view !== 'basic')
      },
    },

    'memories.list': {
      shared: async (s, { query: q }, self) => {
        live(s)
        const store = await at(s, self)
        const full = q.view === 'full'
        const limit = Math.min(q.limit ?? FULL_PAGE, full ? FULL_PAGE : Number.MAX_SAFE_INTEGER)
        const prefix = q.path_prefix ?? '/'
        const filters = { path_prefix: prefix, depth: q.depth ?? 0 }
        const resource = `memory_stores/${s.store.id}/memories`
        const after = decodeCursor(resource, filters, q.page, isTreePosition)
        const { items, more } = store.tree.page(prefix, q.depth ?? 0, after, limit)
        const data = await Promise.all(
          items.map((i): Promise<Memory | MemoryPrefix> | MemoryPrefix =>
            i.kind === 'prefix' ? { type: 'memory_prefix', path: i.path } : view(s.store.id, i.head, full),
          ),
        )
        const last = items.at(-1)
        const next_page =
          more && last
            ? encodeCursor<TreePosition>(resource, filters, last.kind === 'prefix' ? { p: last.path, k: 1 } : { p: last.head.head.path, k: 0 })
            : null
        return { data, next_page }
      },
    },

    'memories.index': {
      shared: async (s, { body }, self) => {
        live(s)
        const store = await at(s, self)
        const token = store.token
        if (body.since === token) return { token }
        return {
          token,
          memories: store.tree.all().map(({ head: h }) => ({
            id: h.id,
            path: h.path,
            content_sha256: h.version.content_sha256!,
            content_size_bytes: h.version.content_size_bytes!,
            memory_version_id: h.version.id,
          })),
        }
      },
    },
  })

  return {
    ...ops,
    'memories.create': (input: Parameters<(typeof ops)['memories.create']>[0]) => staging.around(input, input.body.content ?? '', ops['memories.create']),
    'memories.update': (input: Parameters<(typeof ops)['memories.update']>[0]) =>
      input.body.content == null ? ops['memories.update'](input) : staging.around(input, input.body.content, ops['memories.update']),
  }

  /** One change of a session's tool call: stored as a version by the session, or refused with why (never thrown). */
  async function applyOne(store: LoadedStore, c: MemoryChange, by: MemoryActor): Promise<MemoryApplied> {
    const path = c.type === 'rename' ? c.to : c.path
    const refused = (code: string, message: string): MemoryApplied => ({ ok: false, path, code, message })
    for (const p of c.type === 'rename' ? [c.from, c.to] : [c.path]) {
      const why = memoryPathProblem(p)
      if (why) return refused('invalid_path', `path ${JSON.stringify(p)} ${why}`)
    }
    if (c.type === 'put') {
      const why = memoryContentProblem(c.content)
      if (why) return refused('content_too_large', `content ${why}`)
    }
    try {
      if (c.type === 'delete') {
        const cur = store.tree.atPath(c.path)
        if (cur) await writes.remove(store, cur, by)
        return { ok: true, memory: null }
      }
      let h: Head
      if (c.type === 'rename') {
        const cur = store.tree.atPath(c.from)
        if (!cur) return refused('not_found', `no memory at ${JSON.stringify(c.from)}`)
        h = await writes.modify(store, cur, { path: c.to }, by)
      } else {
        const cur = store.tree.atPath(c.path)
        h = cur ? await writes.modify(store, cur, { content: c.content }, by) : await writes.create(store, c.path, c.content, by)
      }
      return { ok: true, memory: memoryView(store.id, h.head, null) }
    } catch (err) {
      if (isApiError(err) && err.status < 500) return refused(err.reason ?? 'refused', err.message)
      throw err
    }
  }
}
