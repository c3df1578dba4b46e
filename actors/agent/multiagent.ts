import { fail } from '../../protocol/errors/fail.js'
import type {
  AdvisorSetting,
  AgentsLevel,
  AgentsLevelParamsT,
  Multiagent,
  Multiagent20261001,
  Multiagent20261001ParamsT,
  MultiagentParamsT,
} from '../../protocol/schemas/agent.js'
import { MAX_ROSTER, type Member, type ResolvedRoster, resolveRefs, resolveRoster, storedMembers } from './roster.js'
import type { AgentStore } from './state.js'

/**
 * The `multiagent_20261001` topology (WIRE §4), on the coordinator roster's rules (roster.ts). A write is a merge
 * onto what is stored, level by level; a create merges onto nothing, so every key takes its default:
 *
 * - `advisor`, `subagents`, `workflows`: omitted keeps the stored value; null takes the default; an object whose
 *   `type` differs from the stored one replaces it (its omitted keys take their defaults); an object of the stored
 *   `type` merges one level down.
 * - Inside an enabled `subagents`/`workflows`: `inline_agents` and `predefined_agents` are each omitted = keep,
 *   null = default, given = replace (a given list is resolved afresh; a kept one stays as stored). An enabled
 *   advisor has one field, its required `model`, so it replaces.
 *
 * Defaults, where inline agents and workflow runs are not built: `advisor` disabled; `subagents` disabled;
 * `workflows` disabled; `inline_agents` disabled; `predefined_agents` none. The vendor defaults `subagents`,
 * `workflows` and `inline_agents` to enabled, meaning "with inline agents": storing that would return a capability
 * no session has, so each default is the `disabled` the server actually runs, and every key returned is true.
 * An explicit `enabled` workflows or inline_agents is a 422 naming the field (`multiagent_unavailable`); an enabled
 * `subagents` needs a predefined agent (the vendor's rule when inline agents are disabled). The merged result is
 * what is validated.
 */

const DISABLED = { type: 'disabled' } as const

/** Any topology: a coordinator replaces; `multiagent_20261001` merges onto a stored one of its type. */
export function resolveMultiagent(input: MultiagentParamsT, stored: Multiagent | null, selfId: string, store: AgentStore): Promise<ResolvedRoster> {
  if (input.type === 'coordinator') return resolveRoster(input, selfId, store)
  return resolve20261001(input, stored?.type === 'multiagent_20261001' ? stored : undefined, selfId, store)
}

async function resolve20261001(
  p: Multiagent20261001ParamsT,
  stored: Multiagent20261001 | undefined,
  selfId: string,
  store: AgentStore,
): Promise<ResolvedRoster> {
  // Refusals that need no reads first, workflows before subagents (the order of the response's keys after advisor).
  if (p.workflows?.type === 'enabled') throw fail('multiagent_unavailable', 'multiagent.workflows', 'workflow runs')
  if (p.subagents?.type === 'enabled' && p.subagents.inline_agents?.type === 'enabled') {
    throw fail('multiagent_unavailable', 'multiagent.subagents.inline_agents', 'inline agents')
  }
  const advisor: AdvisorSetting = p.advisor === undefined ? (stored?.advisor ?? DISABLED) : p.advisor === null ? DISABLED : p.advisor
  const members: Member[] = []
  const subagents = await level('subagents', p.subagents, stored?.subagents, selfId, store, members)
  // Never enabled (refused above; never stored): what is kept or defaulted is disabled.
  const workflows: AgentsLevel = DISABLED
  return { multiagent: { type: 'multiagent_20261001', advisor: { ...advisor }, subagents, workflows }, members }
}

/** One of `subagents`/`workflows`, merged (see the file's comment); the members it references join `members`. */
async function level(
  key: 'subagents' | 'workflows',
  p: AgentsLevelParamsT | null | undefined,
  stored: AgentsLevel | undefined,
  selfId: string,
  store: AgentStore,
  members: Member[],
): Promise<AgentsLevel> {
  const path = `multiagent.${key}.predefined_agents`
  if (p === undefined && stored) {
    if (stored.type === 'enabled') members.push(...(await keptMembers(stored, key, selfId, store)))
    return stored
  }
  if (!p || p.type === 'disabled') return DISABLED
  const base = stored?.type === 'enabled' ? stored : undefined
  const inline = p.inline_agents === undefined ? (base?.inline_agents ?? DISABLED) : (p.inline_agents ?? DISABLED)
  let predefined = base && p.predefined_agents === undefined ? base.predefined_agents : []
  if (p.predefined_agents === undefined && base) members.push(...(await keptMembers(base, key, selfId, store)))
  else if (p.predefined_agents) {
    const n = p.predefined_agents.length
    if (n > MAX_ROSTER) throw fail('invalid_request', `${path}: at most ${MAX_ROSTER} predefined agents (got ${n})`)
    const r = await resolveRefs(p.predefined_agents, path, selfId, store)
    predefined = r.refs
    members.push(...r.members)
  }
  if (inline.type === 'disabled' && predefined.length === 0) {
    throw fail(
      'invalid_request',
      `${path}: with inline_agents disabled, an enabled ${key} needs at least one predefined agent (or send ${key} {"type":"disabled"})`,
    )
  }
  return { type: 'enabled', inline_agents: { type: inline.type }, predefined_agents: predefined }
}

/** The stored members a kept list references, for the inference_geo rule against the (maybe new) model. */
const keptMembers = (l: AgentsLevel, key: 'subagents' | 'workflows', selfId: string, store: AgentStore) =>
  storedMembers({ type: 'multiagent_20261001', advisor: DISABLED, subagents: DISABLED, workflows: DISABLED, [key]: l }, selfId, store)
