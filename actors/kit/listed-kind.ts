import type { KindContract } from '../../protocol/ops/define.js'
import { type DurableState, durableState, type Work } from './durable-state.js'
import { type Handlers, implement } from './ops.js'
import { Projection, type Sortable } from './projection.js'
import type { MarksOf } from './store.js'
import type { ActorKindDef, HostContext } from './types.js'

export interface ListedKindSpec<S, C extends KindContract, V extends Sortable> {
  contract: C
  /** The KV bucket of its states. */
  bucket: string
  /** What an op on an id without a state answers (the kind's `…_not_found`). */
  missing: (id: string) => Error
  /**
   * The state of an id without a record, for a kind whose create runs on the owner as an exclusive op (its ops then
   * answer `missing` themselves for an empty state; its view shows none). Default: none, creates on any host.
   */
  initial?: (id: string) => S
  /** The key prefix of its states in the bucket (`<kind>.`): what the projection reads. */
  prefix: string
  /** What a list shows of a state. */
  view: (state: S) => V
  /** The kind's handlers on this host, given its states and the projection lists are served from. */
  ops: (ctx: HostContext, states: DurableState<S, C>, projection: Projection<V, S>) => Handlers<C> | Promise<Handlers<C>>
  /** Work that outlasts a request, if the kind has any (kit/durable-actor.ts `Work`). */
  work?: (ctx: HostContext) => Work<S>
  /** The lifecycle events (webhooks) its state changes make (kit/store.ts `MarksOf`). Default none. */
  marks?: MarksOf<S>
  /** A loop of the kind's on every host (a sweep), started after the ops and stopped with the kind. */
  background?: (ctx: HostContext, projection: Projection<V, S>) => { stop(): Promise<void> }
}

/**
 * The common kind on the kit: one durable-state actor per id on the owner of its partition (its writes one at a time,
 * its reads from memory), creates and lists on any host, lists from a projection of the bucket (agents, vaults,
 * webhook endpoints).
 */
export function listedKind<S, C extends KindContract, V extends Sortable>(spec: ListedKindSpec<S, C, V>): ActorKindDef {
  return {
    contract: spec.contract,
    async start(ctx) {
      const work = spec.work?.(ctx)
      const states = await durableState<S, C>(ctx, {
        contract: spec.contract,
        bucket: spec.bucket,
        missing: spec.missing,
        ...(spec.initial ? { initial: spec.initial } : {}),
        ...(work ? { work } : {}),
        ...(spec.marks ? { marks: spec.marks } : {}),
      })
      const projection = new Projection<V, S>(states.kv, spec.prefix, spec.view)
      await projection.start(ctx.log)
      const handlers = await spec.ops(ctx, states, projection)
      const loop = spec.background?.(ctx, projection)
      return states.runtime(implement(spec.contract, handlers), async () => {
        await loop?.stop()
        projection.stop()
      })
    },
  }
}
