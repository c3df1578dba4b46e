import type { Environment } from '../../protocol/schemas/environment.js'
import { Buckets } from '../../protocol/subjects.js'
import { Projection } from '../kit/projection.js'
import type { SharedActorKind } from '../kit/types.js'
import { openBucket } from '../kit/buckets.js'
import { environmentOps } from './behaviour.js'
import { ENV_PREFIX, type StoredEnvironment } from './state.js'

/** Environments: any host serves any environment; KV compare-and-set keeps writers honest. */
export const environmentKind: SharedActorKind = {
  kind: 'environment',
  placement: 'shared',
  async start(ctx) {
    const kv = await openBucket(ctx.kvm, ctx.storage, Buckets.environments)
    const projection = new Projection<Environment>(kv, ENV_PREFIX, (s: StoredEnvironment) => s.env)
    await projection.start()
    return { ops: environmentOps(kv, projection), close: async () => projection.stop() }
  },
}
