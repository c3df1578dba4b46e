import { fail } from '../../protocol/errors/fail.js'
import type { MemoryStoreKind } from '../../protocol/ops/memory.js'
import { patchMetadata, sameJson } from '../../protocol/schemas/common.js'
import type { MemoryStore } from '../../protocol/schemas/memory.js'
import { now } from '../../protocol/time.js'
import { SessionKind } from '../../protocol/ops/session.js'
import { DreamKind } from '../../protocol/ops/dream.js'
import { type ActorClient, type DurableState, type Handlers, keyedCreate, pageOf, type Projection } from '../kit/index.js'
import type { LoadedStores } from './loaded.js'
import { live, memoryOps } from './memory-ops.js'
import type { MemoryRecords } from './records.js'
import type { StoreState } from './state.js'
import { versionOps } from './version-ops.js'
import { Staging } from './staging.js'
import { MemoryWrites } from './writes.js'

export interface MemoryStoreDeps {
  states: DurableState<StoreState, typeof MemoryStoreKind>
  projection: Projection<MemoryStore, StoreState>
  loaded: LoadedStores
  records: MemoryRecords
  /** Asks sessions whether they still exist (a stale attachment, below). */
  client: ActorClient
}

/**
 * An attachment younger than this is never taken for stale: its session's create may still be under way (the attach
 * comes before the session's record is stored).
 */
const ATTACH_GRACE_MS = 60_000

/** A hold younger than this is never taken for stale: its dream's create stores the dream just after the hold. */
const HOLD_GRACE_MS = 60_000

export function memoryStoreOps({ states, projection, loaded, records, client }: MemoryStoreDeps): Handlers<typeof MemoryStoreKind> {
  const ops = states.ops({
    get: {
      shared: (s) => {
        live(s)
        return s.store
      },
    },

    update(s, { body: b }) {
      live(s)
      if (s.store.archived_at) throw fail('memory_store_read_only', s.store.id)
      const cur = s.store
      const next: MemoryStore = {
        ...cur,
        name: b.name ?? cur.name,
        // "" clears it; null and absent keep it.
        description: b.description ?? cur.description,
        metadata: b.metadata == null ? cur.metadata : patchMetadata(cur.metadata, b.metadata),
      }
      if (sameJson(next, cur)) return { reply: cur }
      const store = { ...next, updated_at: now() }
      return { state: { ...s, store }, reply: store }
    },

    archive(s) {
      live(s)
      if (s.store.archived_at) return { reply: s.store }
      const t = now()
      const store = { ...s.store, archived_at: t, updated_at: t }
      return { state: { ...s, store }, reply: store }
    },

    delete(s) {
      live(s)
      if (s.sessions.length) throw fail('memory_store_in_use', s.store.id, s.sessions.length)
      loaded.drop(s.store.id)
      // The record says deleted at once (404 from here, `memory_store.deleted` with it); its memories go as work.
      return { state: { ...s, deleted_at: now() }, reply: { id: s.store.id, type: 'memory_store_deleted' as const } }
    },

    attach(s, { body }) {
      live(s)
      if (s.store.archived_at) throw fail('memory_store_archived', s.store.id)
      if (s.sessions.includes(body.session_id)) return { reply: s.store }
      const attached_at = { ...s.attached_at, [body.session_id]: now() }
      return { state: { ...s, sessions: [...s.sessions, body.session_id], attached_at }, reply: s.store }
    },

    hold(s, { body }) {
      live(s)
      if (s.store.archived_at) throw fail('dream_input_archived', 'output_behavior.memory_store_id', s.store.id)
      const held = s.dream?.id
      if (held === body.dream_id) return { reply: s.store }
      // Decided here, one op at a time on the store's owner: of two dreams racing from any hosts, one holds it.
      if (held !== undefined && held !== body.stale) throw fail('memory_store_held', s.store.id, held)
      return { state: { ...s, dream: { id: body.dream_id, at: now() } }, reply: s.store }
    },

    release(s, { body }) {
      if (s.dream?.id !== body.dream_id) return { reply: { held_by: s.dream?.id ?? null } }
      const { dream: _, ...rest } = s
      return { state: rest, reply: { held_by: null } }
    },

    detach(s, { body }) {
      if (!s.sessions.includes(body.session_id)) return { reply: { attached: s.sessions.length } }
      const sessions = s.sessions.filter((x) => x !== body.session_id)
      const { [body.session_id]: _, ...attached_at } = s.attached_at ?? {}
      return { state: { ...s, sessions, attached_at }, reply: { attached: sessions.length } }
    },
  })

  /**
   * Whether a session that attached the store is gone: asked of the session's owner (404: deleted, or never stored, a
   * create whose host died between the attach and the record). Anything else, or a young attachment, holds.
   */
  const gone = async (s: StoreState, session: string): Promise<boolean> => {
    const at = s.attached_at?.[session]
    if (at !== undefined && Date.now() - Date.parse(at) < ATTACH_GRACE_MS) return false
    return client.call(SessionKind.ops.get, { id: session }).then(
      () => false,
      (err: unknown) => (err as { status?: number }).status === 404,
    )
  }

  /**
   * Whether the dream holding the store is gone: it says it no longer holds it (it ended and its release was cut
   * short, or its work was given up), or it was never stored (its create's host died after the hold). A young hold, or
   * a dream that cannot be asked, holds.
   */
  const staleHold = async (s: StoreState): Promise<boolean> => {
    const held = s.dream
    if (!held || Date.now() - Date.parse(held.at) < HOLD_GRACE_MS) return false
    return client.call(DreamKind.ops.holding, { id: held.id, body: { memory_store_id: s.store.id } }).then(
      (r) => !r.holding,
      (err: unknown) => (err as { status?: number }).status === 404,
    )
  }

  return {
    /**
     * A store attached to sessions first lets go of those that no longer exist (a session delete whose detach was
     * cut short, a create that never stored its session), then decides as its state op does.
     */
    async delete(input) {
      const s = await states.read(input.id)
      for (const session of s && !s.deleted_at ? s.sessions : []) {
        if (await gone(s!, session)) await ops.detach({ ...input, body: { session_id: session } } as Parameters<typeof ops.detach>[0])
      }
      return ops.delete(input)
    },

    /** A hold over a stale one replaces it (named as `stale`, so a holder that changed meanwhile still refuses). */
    async hold(input) {
      const s = await states.read(input.id)
      if (s?.dream && s.dream.id !== input.body.dream_id && (await staleHold(s))) return ops.hold({ ...input, body: { ...input.body, stale: s.dream.id } })
      return ops.hold(input)
    },

    // Placed on any host: the id is new, and the create of its state is the fence against a second one.
    async create(req) {
      const b = req.body
      return keyedCreate('memstore', 'memory_stores.create', req, {
        stored: (id) => states.read(id),
        answer: (s) => s.store,
        async make(id, createdBy) {
          const t = now()
          const store: MemoryStore = {
            id,
            type: 'memory_store',
            name: b.name,
            description: b.description ?? '',
            metadata: b.metadata ?? {},
            created_at: t,
            updated_at: t,
            archived_at: null,
          }
          const state: StoreState = { store, ...(createdBy ? { created_by: createdBy } : {}), sessions: [] }
          return (await states.create(id, state)) && store
        },
      })
    },

    async list({ query: q }) {
      await projection.fresh()
      const includeArchived = q.include_archived ?? false
      const gte = q['created_at[gte]']?.getTime()
      const lte = q['created_at[lte]']?.getTime()
      const filters = { include_archived: includeArchived, gte, lte }
      return pageOf(projection, 'memory_stores', filters, q.page, q.limit ?? 20, (m) => {
        if (!includeArchived && m.archived_at !== null) return false
        const t = Date.parse(m.created_at)
        return (gte === undefined || t >= gte) && (lte === undefined || t <= lte)
      })
    },

    ...withoutDelete(withoutHold(ops)),
    ...memoryOps(states, loaded, records, new MemoryWrites(records), new Staging(records, states)),
    ...versionOps(states, loaded, records),
  }
}

/** The state ops but `hold`, which the kind wraps. */
function withoutHold<T extends { hold: unknown }>(ops: T): Omit<T, 'hold'> {
  const { hold: _, ...rest } = ops
  return rest
}

/** The state ops but `delete`, which the kind wraps. */
function withoutDelete<T extends { delete: unknown }>(ops: T): Omit<T, 'delete'> {
  const { delete: _, ...rest } = ops
  return rest
}
