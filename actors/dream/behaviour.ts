import { fail } from '../../protocol/errors/fail.js'
import { fingerprint } from '../../protocol/hash.js'
import type { DreamKind } from '../../protocol/ops/dream.js'
import { MemoryStoreKind } from '../../protocol/ops/memory.js'
import type { Dream, DreamCreateInput, DreamInput, DreamStatus, OutputBehavior } from '../../protocol/schemas/dream.js'
import { now } from '../../protocol/time.js'
import type { ActorClient, DurableState, Handlers, Projection } from '../kit/index.js'
import { pageOf } from '../kit/index.js'
import { checkInputs } from './admission.js'
import type { DreamRunner } from './runner.js'
import { ZERO_USAGE } from './settle.js'
import { type DreamState, ended } from './state.js'

export interface DreamDeps {
  client: ActorClient
  states: DurableState<DreamState, typeof DreamKind>
  projection: Projection<Dream, DreamState>
  runner: DreamRunner
}

/** The dream a create makes: `pending`, its inputs as given (session ids sorted), `model` as an object. */
function newDream(id: string, b: DreamCreateInput): Dream {
  const inputs = (b.inputs as DreamInput[]).map(
    (i): DreamInput =>
      i.type === 'sessions' ? { type: 'sessions', session_ids: [...i.session_ids].sort() } : { type: 'memory_store', memory_store_id: i.memory_store_id },
  )
  const model = b.model as string | { id: string }
  return {
    id,
    type: 'dream',
    status: 'pending',
    inputs,
    model: { id: typeof model === 'string' ? model : model.id, speed: 'standard' },
    instructions: b.instructions ?? null,
    output_behavior: (b.output_behavior as OutputBehavior | undefined) ?? { type: 'create_new' },
    outputs: [],
    session_id: null,
    error: null,
    usage: ZERO_USAGE,
    created_at: now(),
    ended_at: null,
    archived_at: null,
  }
}

export function dreamOps({ client, states, projection, runner }: DreamDeps): Handlers<typeof DreamKind> {
  /** The dream of a state, or the 404 of an id no create stored. */
  const shown = (s: DreamState, id: string): Dream => {
    if (!s.dream) throw fail('dream_not_found', id)
    return s.dream
  }
  /** A retried create (same Idempotency-Key, so the same id) answered with what its first attempt stored. */
  const retried = (s: DreamState, createdBy: string | undefined): Dream => {
    if (createdBy === undefined || s.created_by !== createdBy) throw fail('idempotency_key_reused')
    return s.dream!
  }

  const ops = states.ops({
    get: { shared: (s, { id }) => shown(s, id) },

    holding: { shared: (s, { body }) => ({ holding: s.held === body.memory_store_id }) },

    archive(s, { id }) {
      const d = shown(s, id)
      if (!ended(d)) throw fail('dream_not_ended', id, d.status)
      if (d.archived_at) return { reply: d }
      const dream = { ...d, archived_at: now() }
      return { state: { ...s, dream }, reply: dream }
    },

    cancel(s, { id }) {
      const d = shown(s, id)
      if (d.status === 'canceled') return { reply: d }
      if (ended(d)) throw fail('dream_ended', id, d.status)
      // Its session (if the start made it) is interrupted by the work from here, and the store let go once it stopped.
      const dream: Dream = { ...d, status: 'canceled', ended_at: now() }
      return { state: { ...s, dream, interrupt: true }, reply: dream }
    },
  })

  return {
    ...ops,

    /** A cancel ends the running dream's wait, so it is not queued behind a whole look at the session. */
    cancel(input) {
      runner.wake(input.id)
      return ops.cancel(input)
    },

    /**
     * On the owner of the new id: the inputs checked, the store of an `update_existing` dream held (409 while another
     * dream holds it), then the dream stored with its work (which starts it). A host that dies between the hold and the
     * store leaves a hold the store finds stale (the dream is not there to hold it).
     */
    async create(req) {
      const { id, body: b, rid } = req
      const createdBy = req.key === undefined ? undefined : fingerprint(b)
      const had = await states.read(id)
      if (had?.dream) return retried(had, createdBy)
      await checkInputs(client, b, rid)
      const out = b.output_behavior as OutputBehavior | undefined
      const held = out?.type === 'update_existing' ? out.memory_store_id : undefined
      if (held) await client.call(MemoryStoreKind.ops.hold, { id: held, rid, body: { dream_id: id } })
      return states.exclusive(id, (s) => {
        if (s.dream) return { reply: retried(s, createdBy) }
        const dream = newDream(id, b)
        const state: DreamState = { dream, ...(createdBy ? { created_by: createdBy } : {}), ...(held ? { held } : {}) }
        return { state, reply: dream }
      })
    },

    async list({ query: q }) {
      await projection.fresh()
      const includeArchived = q.include_archived ?? false
      const gt = q['created_at[gt]']?.getTime()
      const lt = q['created_at[lt]']?.getTime()
      const statuses = q.statuses ? [...new Set(q.statuses as DreamStatus[])].sort() : undefined
      const filters = { include_archived: includeArchived, gt, lt, statuses }
      return pageOf(projection, 'dreams', filters, q.page, q.limit ?? 20, (d) => {
        if (!includeArchived && d.archived_at !== null) return false
        if (statuses && !statuses.includes(d.status)) return false
        const t = Date.parse(d.created_at)
        return (gt === undefined || t > gt) && (lt === undefined || t < lt)
      })
    },
  }
}
