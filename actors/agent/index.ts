import type { Agent } from '../../protocol/schemas/agent.js'
import { AgentKind } from '../../protocol/ops/agent.js'
import { Buckets } from '../../protocol/subjects.js'
import { Projection } from '../kit/projection.js'
import { openBucket } from '../kit/buckets.js'
import { implement } from '../kit/ops.js'
import { OwnedPartitions, partitionOfKey } from '../kit/owned.js'
import type { ActorKindDef } from '../kit/types.js'
import { agentOps } from './behaviour.js'
import { AgentStore, HEAD_PREFIX, type StoredHead } from './state.js'

/**
 * Agents. Creates, lists and resolves run on any host; the head key's compare-and-set keeps writers honest (see
 * state.ts), and lists come from a projection of the head keys. Get, update, archive and versions of agent X run
 * on the one host that holds X's partition: as the only writer of those heads it keeps them in a write-through
 * cache, so reads cost no KV round trip (a resolve on that host too: a session created where its agent's owner is
 * reads the agent from memory); writes stay compare-and-set, so a host that lost its partition without noticing
 * still cannot overwrite the new owner's work.
 */
export const agentKind: ActorKindDef = {
  contract: AgentKind,
  async start(ctx) {
    const kv = await openBucket(ctx.kvm, ctx.storage, Buckets.agents)
    const projection = new Projection<Agent, StoredHead>(kv, HEAD_PREFIX, (s) => s.agent)
    await projection.start()
    const owned = new OwnedPartitions()
    const partitionOfHead = partitionOfKey(HEAD_PREFIX)
    // Served from memory only while this host may serve the partition: a host back from a pause reads KV until its
    // records say the partition is still its own (and drop the cache when it is not).
    const store = new AgentStore(kv, (key) => {
      const p = partitionOfHead(key)
      return owned.has(p) && ctx.serves('agent', p)
    })
    owned.onChange = (p) => store.heads.forget((key) => partitionOfHead(key) === p)
    return {
      ops: implement(AgentKind, agentOps(store, projection)),
      async acquired(p) {
        owned.add(p)
      },
      async released(p) {
        owned.delete(p)
      },
      close: async () => projection.stop(),
    }
  },
}
