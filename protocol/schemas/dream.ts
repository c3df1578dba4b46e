import { type } from 'arktype'
import { boolParam, limitParam, pageParam, timestampParam } from './common.js'
import { listParam, tagged } from './events.js'
import { DreamId, MemoryStoreId, SessionId } from './ids.js'
import { lazy } from './lazy.js'
import { listOf } from './list.js'

/**
 * Dreams on the wire (the official client's `beta.dreams`, beta `dreaming-2026-04-21`): a job that reads a memory store
 * and past sessions' transcripts and writes a reorganised store, run as a session of its own. Shapes only; whether the
 * store and sessions exist, and whether another dream holds the store, are the dream's owner's to decide.
 */

/** The most sessions one dream reads (the client's docs: 1 to 100 ids). */
export const MAX_DREAM_SESSIONS = 100
/** `instructions`, in characters (the client's docs: 1 to 4,096). */
export const MAX_DREAM_INSTRUCTIONS = 4096

export const DREAM_STATUSES = ['pending', 'running', 'completed', 'failed', 'canceled'] as const
export type DreamStatus = (typeof DREAM_STATUSES)[number]
/** The statuses a dream never leaves. */
export const FINAL_DREAM_STATUSES: readonly DreamStatus[] = ['completed', 'failed', 'canceled']

export type DreamInput = { type: 'memory_store'; memory_store_id: string } | { type: 'sessions'; session_ids: string[] }
export type OutputBehavior = { type: 'create_new' } | { type: 'update_existing'; memory_store_id: string }

export interface DreamUsage {
  cache_creation_input_tokens: number
  cache_read_input_tokens: number
  input_tokens: number
  output_tokens: number
}

export interface Dream {
  id: string
  type: 'dream'
  status: DreamStatus
  inputs: DreamInput[]
  model: { id: string; speed: 'standard' }
  instructions: string | null
  output_behavior: OutputBehavior
  outputs: Array<{ type: 'memory_store'; memory_store_id: string }>
  session_id: string | null
  error: { type: string; message: string } | null
  usage: DreamUsage
  created_at: string
  ended_at: string | null
  archived_at: string | null
}

const StoreInput = lazy(() => type({ '+': 'reject', type: "'memory_store'", memory_store_id: MemoryStoreId }))

const SessionsInput = lazy(() =>
  type({ '+': 'reject', type: "'sessions'", session_ids: listOf(SessionId, { min: 1, max: MAX_DREAM_SESSIONS }) }).narrow((v, ctx) => {
    const seen = new Map<string, number>()
    for (const [j, id] of v.session_ids.entries()) {
      const first = seen.get(id)
      if (first !== undefined) return ctx.reject({ problem: `must not repeat ${id} (also at session_ids[${first}])`, relativePath: ['session_ids', j] })
      seen.set(id, j)
    }
    return true
  }),
)

const Input = lazy(() => tagged(['memory_store', 'sessions'], StoreInput.or(SessionsInput), '"memory_store" or "sessions"'))

const ModelId = lazy(() => type('1 <= string <= 256'))

/** A model id, or `{id, speed?}`: dreams run at `standard` speed only (the client's docs). */
const Model = lazy(() =>
  ModelId.or(
    type({ '+': 'reject', id: ModelId, 'speed?': "'standard' | 'fast' | null" }).narrow(
      (m, ctx) => m.speed !== 'fast' || ctx.reject({ problem: 'must be "standard": dreams run at standard speed only', relativePath: ['speed'] }),
    ),
  ),
)

const Output = lazy(() =>
  tagged(
    ['create_new', 'update_existing'],
    type({ '+': 'reject', type: "'create_new'" }).or({ '+': 'reject', type: "'update_existing'", memory_store_id: MemoryStoreId }),
    '"create_new" or "update_existing"',
  ),
)

export const DreamCreate = lazy(() =>
  type({
    '+': 'reject',
    inputs: listOf(Input, { min: 1, max: 2 }),
    model: Model,
    'instructions?': type(`1 <= string <= ${MAX_DREAM_INSTRUCTIONS}`).or('null'),
    'output_behavior?': Output,
  }).narrow((b, ctx) => {
    const inputs = b.inputs as DreamInput[]
    if (inputs.length === 2 && inputs[0]!.type === inputs[1]!.type)
      return ctx.reject({
        problem: `must not repeat a ${inputs[0]!.type} entry (at most one memory_store and one sessions entry)`,
        relativePath: ['inputs', 1],
      })
    const out = b.output_behavior as OutputBehavior | undefined
    if (out?.type !== 'update_existing') return true
    const store = inputs.find((i) => i.type === 'memory_store')
    if (store?.memory_store_id === out.memory_store_id) return true
    return ctx.reject({
      problem: store
        ? `must be the memory store of the memory_store entry of inputs (${store.memory_store_id}): update_existing writes into the store the dream reads`
        : 'needs a memory_store entry in inputs naming this store: update_existing writes into the store the dream reads',
      relativePath: ['output_behavior', 'memory_store_id'],
    })
  }),
)

export const DreamListQuery = lazy(() =>
  type({
    'created_at[gt]?': timestampParam,
    'created_at[lt]?': timestampParam,
    'include_archived?': boolParam,
    'statuses?': listParam(type.enumerated(...DREAM_STATUSES)),
    'limit?': limitParam(100),
    'page?': pageParam,
  }),
)

/** Internal (a dream's owner → a store's owner): the dream `dream_id` holds the store while it updates it; `stale` is a holder found gone. */
export const MemoryStoreHoldInput = lazy(() => type({ '+': 'reject', dream_id: DreamId, 'stale?': DreamId }))

/** Internal (a store's owner → a dream's owner): whether the dream still holds `memory_store_id`. */
export const DreamHoldingInput = lazy(() => type({ '+': 'reject', memory_store_id: MemoryStoreId }))

export type DreamCreateInput = typeof DreamCreate.infer
export type DreamListInput = typeof DreamListQuery.infer
