import type { Agent } from '../../protocol/schemas/agent.js'
import { Buckets } from '../../protocol/subjects.js'
import { Projection } from '../kit/projection.js'
import { openBucket } from '../kit/buckets.js'
import { OwnedPartitions, partitionOfKey } from '../kit/owned.js'
import type { Handler, PartitionedActorKind, SharedActorKind } from '../kit/types.js'
import { internal } from '../../protocol/errors.js'
import { agentOps } from './behaviour.js'
import { AgentStore, HEAD_PREFIX, type StoredHead } from './state.js'

/**
 * Agents: any host serves any agent; the head key's compare-and-set keeps writers honest (see state.ts).
 * Lists are served from a projection of the head keys (latest version of each agent).
 */
export const agentKind: SharedActorKind = {
  kind: 'agent',
  placement: 'shared',
  async start(ctx) {
    const kv = await openBucket(ctx.kvm, ctx.storage, Buckets.agents)
    const projection = new Projection<Agent>(kv, HEAD_PREFIX, (s: StoredHead) => s.agent)
    await projection.start()
    return { ops: agentOps(new AgentStore(kv), projection), close: async () => projection.stop() }
  },
}

/**
 * The owner side of agents: get, update, archive and versions of agent X go to the one host that leases
 * X's partition. As the only writer of those heads it keeps them in a write-through cache, so reads cost
 * no KV round trip; writes stay compare-and-set, so a host that lost its lease without noticing still
 * cannot overwrite the new owner's work.
 */
export const agentOwnerKind: PartitionedActorKind = {
  kind: 'agent',
  placement: 'partitioned',
  async start(ctx) {
    const kv = await openBucket(ctx.kvm, ctx.storage, Buckets.agents)
    const owned = new OwnedPartitions()
    const partitionOfHead = partitionOfKey(HEAD_PREFIX)
    const store = new AgentStore(kv, (key) => owned.has(partitionOfHead(key)))
    owned.onChange = (p) => store.heads.forget((key) => partitionOfHead(key) === p)
    // Only the per-agent ops are routed here (protocol/routes/agents.ts); lists stay on the shared kind,
    // so no projection is kept on this side.
    const all = agentOps(store, undefined as never)
    const ops: Record<string, Handler> = { get: all.get!, update: all.update!, archive: all.archive!, versions: all.versions! }
    return {
      async handle(_id, req) {
        const op = ops[req.op]
        if (!op) throw internal(`No operation ${req.op} on agent owners`)
        return op(req)
      },
      async acquired(p) {
        owned.add(p)
      },
      async released(p) {
        owned.delete(p)
      },
      async close() {},
    }
  },
}
