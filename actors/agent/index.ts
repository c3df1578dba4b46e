import { fail } from '../../protocol/errors/fail.js'
import { AgentKind } from '../../protocol/ops/agent.js'
import { Buckets } from '../../protocol/subjects.js'
import { listedKind } from '../kit/index.js'
import { agentOps } from './behaviour.js'
import { agentMarks } from './marks.js'
import { skillResolver } from './skills.js'
import { AgentStore, HEAD_PREFIX, type StoredHead } from './state.js'

/**
 * Agents (kit/listed-kind.ts). Each agent is a durable-state actor whose state is its head, on the host that
 * holds its partition: get, update, archive and versions run there, one write at a time, and read the head from
 * memory (a resolve on that host too: a session created where its agent's owner is reads the agent from memory);
 * every write of a head is fenced by the revision it replaces, so a host that lost its partition without noticing
 * cannot overwrite the new owner's work. Creates, lists and resolves run on any host: a create writes the new head
 * once (and its owner, if it is this host, has it in memory from there), lists come from a projection of the heads.
 */
export const agentKind = listedKind({
  contract: AgentKind,
  bucket: Buckets.agents,
  marks: agentMarks,
  missing: (id) => fail('agent_not_found', id),
  prefix: HEAD_PREFIX,
  view: (s: StoredHead) => s.agent,
  ops: (ctx, heads, projection) => agentOps(new AgentStore(heads), projection, skillResolver(ctx.client)),
})

// An agent's configuration rules, which a session's own settings and a deployment's follow too.
export { checkSkillRequirements, checkToolGraph, normalizeModel, normalizeServers, normalizeTools, textOrNull } from './normalize.js'
export { ADVISOR_TOOL, checkCoordinatorToolNames, geoBreach, LIST_AGENTS, type Member, SEND_TO_AGENT, storedRefs } from './roster.js'
