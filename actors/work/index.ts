import { WorkKind } from '../../protocol/ops/work.js'
import { Buckets } from '../../protocol/subjects.js'
import { type ActorKindDef, durableState, implement } from '../kit/index.js'
import { workOps } from './behaviour.js'
import { emptyQueue, type Queue } from './state.js'
import { loadTokenKey } from './token-key.js'
import { trackQueues } from './metrics.js'

/**
 * The self-hosted work queue (issue 29): one durable-state actor per environment, its state the environment's items
 * and their leases (actors/work/state.ts), on the host owning the environment's partition of this kind. Polls block in
 * memory there and are woken by the queue op of any host; lapsed leases are applied by every op and by a timer.
 */
export const workKind: ActorKindDef = {
  contract: WorkKind,
  async start(ctx) {
    const queues = await durableState<Queue, typeof WorkKind>(ctx, { contract: WorkKind, bucket: Buckets.workQueues, initial: emptyQueue })
    const tokenKey = ctx.settings.tokenKey ?? (await loadTokenKey(ctx.kvm, ctx.storage))
    const { handlers, close } = workOps({ ctx, queues, tokenKey })
    const untrack = trackQueues(queues)
    return queues.runtime(implement(WorkKind, handlers), () => {
      untrack()
      return close()
    })
  },
}

// The gateway checks session tokens with this key (the supervisor hands it over).
export { loadTokenKey } from './token-key.js'

// What `troupe status` reads of the queues where they are stored.
export type { Item, Queue } from './state.js'
