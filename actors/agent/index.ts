import { fail } from '../../protocol/errors/fail.js'
import type { Agent } from '../../protocol/schemas/agent.js'
import { AgentKind } from '../../protocol/ops/agent.js'
import { Buckets } from '../../protocol/subjects.js'
import { durableState } from '../kit/durable-state.js'
import { Projection } from '../kit/projection.js'
import { implement } from '../kit/ops.js'
import type { ActorKindDef } from '../kit/types.js'
import { agentOps } from './behaviour.js'
import { AgentStore, HEAD_PREFIX, type StoredHead } from './state.js'

/**
 * Agents. Each agent is a durable-state actor (kit/durable-state.ts) whose state is its head, on the host that
 * holds its partition: get, update, archive and versions run there, one write at a time, and read the head from
 * memory (a resolve on that host too: a session created where its agent's owner is reads the agent from memory);
 * every write of a head is fenced by the revision it replaces, so a host that lost its partition without noticing
 * cannot overwrite the new owner's work. Creates, lists and resolves run on any host: a create writes the new head
 * once (and its owner, if it is this host, has it in memory from there), lists come from a projection of the heads.
 */
export const agentKind: ActorKindDef = {
  contract: AgentKind,
  async start(ctx) {
    const heads = await durableState<StoredHead, typeof AgentKind>(ctx, {
      contract: AgentKind,
      bucket: Buckets.agents,
      missing: (id) => fail('agent_not_found', id),
    })
    const projection = new Projection<Agent, StoredHead>(heads.kv, HEAD_PREFIX, (s) => s.agent)
    await projection.start()
    return heads.runtime(implement(AgentKind, agentOps(new AgentStore(heads), projection)), () => projection.stop())
  },
}
