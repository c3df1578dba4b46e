import type { Agent } from '../../protocol/schemas/agent.js'
import { Buckets } from '../../protocol/subjects.js'
import { Projection } from '../kit/projection.js'
import { retryWhileStarting } from '../kit/retry.js'
import type { SharedActorKind } from '../kit/types.js'
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
    const kv = await retryWhileStarting('agents bucket', () => ctx.kvm.create(Buckets.agents, { history: 1 }))
    const projection = new Projection<Agent>(kv, HEAD_PREFIX, (s: StoredHead) => s.agent)
    await projection.start()
    return { ops: agentOps(new AgentStore(kv), projection), close: async () => projection.stop() }
  },
}
