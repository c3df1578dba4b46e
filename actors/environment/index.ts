import type { Environment } from '../../protocol/schemas/environment.js'
import { EnvironmentKind } from '../../protocol/ops/environment.js'
import { Buckets } from '../../protocol/subjects.js'
import { type ActorKindDef, implement, openBucket, Projection } from '../kit/index.js'
import { environmentOps } from './behaviour.js'
import { ENV_PREFIX, type StoredEnvironment } from './state.js'

/** Environments: any host serves any environment; KV compare-and-set keeps writers honest. */
export const environmentKind: ActorKindDef = {
  contract: EnvironmentKind,
  async start(ctx) {
    const kv = await openBucket(ctx.kvm, ctx.storage, Buckets.environments)
    const projection = new Projection<Environment, StoredEnvironment>(kv, ENV_PREFIX, (s) => s.env)
    await projection.start(ctx.log)
    return { ops: implement(EnvironmentKind, environmentOps(kv, projection)), close: async () => projection.stop() }
  },
}
