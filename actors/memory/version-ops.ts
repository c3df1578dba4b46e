import { decodeCursor, encodeCursor, isRecordPosition } from '../../protocol/cursor.js'
import { fail } from '../../protocol/errors/fail.js'
import type { MemoryStoreKind } from '../../protocol/ops/memory.js'
import type { MemoryVersion } from '../../protocol/schemas/memory.js'
import { now } from '../../protocol/time.js'
import type { DurableState } from '../kit/index.js'
import type { VersionFilter } from './history.js'
import type { LoadedStores } from './loaded.js'
import { FULL_PAGE, live } from './memory-ops.js'
import type { MemoryRecords, VersionRecord } from './records.js'
import { API_ACTOR, hasContent, type StoreState, versionView } from './state.js'

/** The version ops of a store, on its owner: lists and gets beside the writes, a redaction one of them. */
export function versionOps(states: DurableState<StoreState, typeof MemoryStoreKind>, loaded: LoadedStores, records: MemoryRecords) {
  const history = async (s: StoreState, self: { activation: number }) => (await loaded.get(s.store.id, self.activation)).versions()
  const find = (h: Awaited<ReturnType<typeof history>>, s: StoreState, id: string): VersionRecord => {
    const v = h.get(id)
    if (!v) throw fail('memory_version_not_found', id, s.store.id)
    return v
  }
  const view = async (store: string, v: VersionRecord, full: boolean): Promise<MemoryVersion> =>
    versionView(store, v, full && hasContent(v) ? ((await records.content(store, v.id)) ?? null) : null)

  return states.ops({
    'versions.get': {
      shared: async (s, { sub, query }, self) => {
        live(s)
        return view(s.store.id, find(await history(s, self), s, sub), query.view !== 'basic')
      },
    },

    'versions.list': {
      shared: async (s, { query: q }, self) => {
        live(s)
        const h = await history(s, self)
        const full = q.view === 'full'
        const limit = Math.min(q.limit ?? FULL_PAGE, full ? FULL_PAGE : Number.MAX_SAFE_INTEGER)
        const ms = (d: unknown) => (d instanceof Date ? d.getTime() : undefined)
        const filter: VersionFilter = {
          memory_id: q.memory_id,
          operation: q.operation,
          session_id: q.session_id,
          api_key_id: q.api_key_id,
          service_account_id: q.service_account_id,
          gte: ms(q['created_at[gte]']),
          lte: ms(q['created_at[lte]']),
        }
        const resource = `memory_stores/${s.store.id}/memory_versions`
        const after = decodeCursor(resource, filter as Record<string, unknown>, q.page, isRecordPosition)
        const { items, more } = h.page(filter, after, limit)
        const data = await Promise.all(items.map((v) => view(s.store.id, v, full)))
        const last = items.at(-1)
        return {
          data,
          next_page: more && last ? encodeCursor(resource, filter as Record<string, unknown>, { id: last.id, created_at: last.created_at }) : null,
        }
      },
    },

    // Redaction is allowed in an archived store (a compliance action), and once done answers as it is.
    'versions.redact': async (s, { sub }, self) => {
      live(s)
      const store = await loaded.get(s.store.id, self.activation)
      const h = await store.versions()
      const v = find(h, s, sub)
      if (v.redacted_at) return { reply: versionView(s.store.id, v, null) }
      const cur = store.tree.get(v.memory_id)
      // Its content is the memory's current state: clearing it would leave the memory without its version.
      if (cur && cur.head.version.id === v.id) throw fail('memory_version_current', v.id, v.memory_id)
      const redacted: VersionRecord = { ...v, path: null, content_sha256: null, content_size_bytes: null, redacted_at: now(), redacted_by: API_ACTOR }
      await records.redact(s.store.id, redacted, hasContent(v))
      h.put(redacted)
      return { reply: versionView(s.store.id, redacted, null) }
    },
  })
}
