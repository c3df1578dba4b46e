import { fail } from '../../protocol/errors/fail.js'
import type {
  Agent,
  AgentReference,
  AgentRefParamsT,
  AgentsLevel,
  Coordinator,
  CoordinatorParamsT,
  ModelConfig,
  Multiagent,
  RosterEntry,
  Tool,
} from '../../protocol/schemas/agent.js'
import type { SessionMultiagent } from '../../protocol/session.js'
import type { AgentStore } from './state.js'

/**
 * Coordinator rosters (SPEC "Coordinator topology", "Agent validation rules"), and the reference rules a
 * `multiagent_20261001`'s predefined agents share with them (`resolveRefs`; multiagent.ts). Input entries are resolved
 * to concrete `{type:"agent", id, version}` references, with the advisor (if any) last. References are read as
 * any head is (`AgentStore.head`): the roster's agents are the same kind as the one being written.
 *
 * `self` resolves to the version being written, which is only known once the write is known to be
 * material, so it is resolved to SELF_VERSION first and stamped by `stampSelf`. Any entry naming the
 * agent's own id is its self entry: an explicit reference to one's own id is refused (use `{type:"self"}`),
 * which keeps "self always points at the version that contains it" true across updates.
 */

export const MAX_ROSTER = 20
export const SELF_VERSION = 0

/** The tools a coordinator's primary thread is offered (actors/session/threads/ runs them). */
export const LIST_AGENTS = 'list_agents'
export const SEND_TO_AGENT = 'send_to_agent'
/**
 * The advisor's tool. Its runtime identity is `vendor.advisor` (SPEC "Coordinator topology"), which the Messages API
 * refuses as a tool name (letters, digits, `_` and `-` only): the tool is `advisor`, the thread's agent name the identity.
 */
export const ADVISOR_TOOL = 'advisor'

/** The tool names a multiagent offers its primary thread: the advisor's when it has one, the roster's when it has members. */
export function multiagentToolNames(m: Multiagent | SessionMultiagent | null): string[] {
  if (!m) return []
  const entries: readonly { type: string }[] = m.type === 'coordinator' ? m.agents : m.subagents.type === 'enabled' ? m.subagents.predefined_agents : []
  const advisor = m.type === 'coordinator' ? entries.some((e) => e.type === 'advisor') : m.advisor.type === 'enabled'
  return [...(advisor ? [ADVISOR_TOOL] : []), ...(entries.some((e) => e.type === 'agent') ? [LIST_AGENTS, SEND_TO_AGENT] : [])]
}

/**
 * A custom tool may not take a name the multiagent offers the primary thread: the request would carry two tools of
 * one name, which the Messages API refuses. The field is named from `tools`; a session's caller prefixes `agent.`.
 */
export function checkCoordinatorToolNames(m: Multiagent | SessionMultiagent | null, tools: readonly Tool[]): void {
  const reserved = multiagentToolNames(m)
  if (!reserved.length) return
  const i = tools.findIndex((t) => t.type === 'custom' && reserved.includes(t.name))
  if (i < 0) return
  const name = (tools[i] as { name: string }).name
  throw fail('invalid_request', `tools[${i}].name: ${JSON.stringify(name)} is reserved: this agent's multiagent offers a tool of that name`)
}

/** A referenced agent version, as the inference_geo rule needs it. */
export interface Member {
  /** Where the request (or the stored roster) names it: `multiagent.agents[2]`. */
  at: string
  id: string
  version: number
  geo: string | undefined
}

export interface ResolvedRoster {
  multiagent: Multiagent
  /** Independently referenced agents (not self, not the advisor). */
  members: Member[]
}

const at = (i: number) => `multiagent.agents[${i}]`

export async function resolveRoster(input: CoordinatorParamsT, selfId: string, store: AgentStore): Promise<ResolvedRoster & { multiagent: Coordinator }> {
  const entries = input.agents
  if (entries.length < 1 || entries.length > MAX_ROSTER) {
    throw fail('invalid_request', `multiagent.agents: a coordinator roster has 1 to ${MAX_ROSTER} entries (got ${entries.length})`)
  }
  const isAdvisor = (e: (typeof entries)[number]) => typeof e !== 'string' && e.type === 'advisor'
  const advisors = entries.flatMap((e, i) => (isAdvisor(e) ? [i] : []))
  if (advisors.length > 1) throw fail('invalid_request', `${at(advisors[1]!)}: at most one advisor entry is allowed (another is ${at(advisors[0]!)})`)
  const advisorAt = advisors[0]
  if (advisorAt !== undefined && advisorAt !== entries.length - 1) {
    throw fail('invalid_request', `${at(advisorAt)}: the advisor entry must be the last entry of the roster`)
  }
  // The advisor is last, so the references are a prefix: their indices are the roster's.
  const refs = entries.filter((e): e is AgentRefParamsT => !isAdvisor(e))
  if (refs.length === 0) throw fail('invalid_request', 'multiagent.agents: a coordinator roster needs at least one agent besides the advisor')
  const r = await resolveRefs(refs, 'multiagent.agents', selfId, store)
  const agents: RosterEntry[] = r.refs
  if (advisorAt !== undefined) agents.push({ type: 'advisor', model: (entries[advisorAt] as { model: string }).model })
  return { multiagent: { type: 'coordinator', agents }, members: r.members }
}

/**
 * A list of agent references at `path` (a coordinator's roster, a predefined-agent list): shape rules first, in
 * order, so the first broken entry is the one named (self at most once, distinct agents, the agent's own id only
 * as self), then each reference resolved to a concrete version that exists, is not archived and has no multiagent.
 */
export async function resolveRefs(
  entries: readonly AgentRefParamsT[],
  path: string,
  selfId: string,
  store: AgentStore,
): Promise<{ refs: AgentReference[]; members: Member[] }> {
  const where = (i: number) => `${path}[${i}]`
  type Ref = { at: string; id: string; version?: number }
  const refs: Ref[] = []
  const seen = new Map<string, number>()
  let selfAt: number | undefined
  entries.forEach((e, i) => {
    if (typeof e !== 'string' && e.type === 'self') {
      if (selfAt !== undefined) throw fail('invalid_request', `${where(i)}: {"type":"self"} may appear at most once (already at ${where(selfAt)})`)
      selfAt = i
      seen.set(selfId, i)
      return
    }
    const id = typeof e === 'string' ? e : e.id
    const version = typeof e === 'string' ? undefined : e.version
    const j = seen.get(id)
    if (j !== undefined) {
      throw fail('invalid_request', `${where(i)}: agent ${id} is already in the roster (${where(j)}); roster entries must be distinct agents`)
    }
    if (id === selfId) throw fail('invalid_request', `${where(i)}: ${id} is this agent; reference it with {"type":"self"}`)
    seen.set(id, i)
    refs.push({ at: where(i), id, ...(version !== undefined ? { version } : {}) })
  })
  const members = await Promise.all(refs.map((r) => resolveRef(r, store)))
  let next = 0
  const out: AgentReference[] = entries.map((_, i) => {
    if (i === selfAt) return { type: 'agent', id: selfId, version: SELF_VERSION }
    const m = members[next++]!
    return { type: 'agent', id: m.id, version: m.version }
  })
  return { refs: out, members }
}

async function resolveRef(r: { at: string; id: string; version?: number }, store: AgentStore): Promise<Member> {
  const head = (await store.head(r.id))?.agent
  if (!head) throw fail('roster_member_not_found', r.at, r.id)
  if (head.archived_at) throw fail('roster_member_archived', r.at, r.id)
  let rec: Agent | undefined = head
  if (r.version !== undefined) {
    if (r.version > head.version) {
      throw fail('invalid_request', `${r.at}: agent ${r.id} has no version ${r.version} (latest is ${head.version})`)
    }
    rec = await store.version(head, r.version)
    if (!rec) throw fail('invalid_request', `${r.at}: version ${r.version} of agent ${r.id} is not readable`)
  }
  if (rec.multiagent) {
    throw fail('invalid_request', `${r.at}: agent ${r.id} version ${rec.version} is itself a coordinator (it has multiagent); rosters are one level deep`)
  }
  return { at: r.at, id: r.id, version: rec.version, geo: rec.model.inference_geo }
}

/** The agent references a stored multiagent holds, each with where it sits (the advisor is none). */
export function storedRefs(m: Multiagent): Array<{ ref: AgentReference; at: string }> {
  if (m.type === 'coordinator') {
    return m.agents.flatMap((ref, i) => (ref.type === 'agent' ? [{ ref, at: at(i) }] : []))
  }
  const level = (key: 'subagents' | 'workflows') => {
    const l = m[key]
    return l.type === 'enabled' ? l.predefined_agents.map((ref, i) => ({ ref, at: `multiagent.${key}.predefined_agents[${i}]` })) : []
  }
  return [...level('subagents'), ...level('workflows')]
}

/** The members of stored references, self left out (for re-checking inference_geo when only the model changes). */
export async function storedMembers(m: Multiagent, selfId: string, store: AgentStore): Promise<Member[]> {
  return Promise.all(
    storedRefs(m)
      .filter(({ ref }) => ref.id !== selfId)
      .map(async ({ ref, at }) => {
        const head = (await store.head(ref.id))?.agent
        const rec = head ? await store.version(head, ref.version) : undefined
        return { at, id: ref.id, version: ref.version, geo: rec?.model.inference_geo }
      }),
  )
}

/**
 * SPEC: a coordinator that pins model.inference_geo needs every independently referenced agent to pin the
 * same value; one that leaves it unset needs every member to leave it unset. Returns the first breach.
 */
export function geoBreach(model: ModelConfig, members: Member[]): string | undefined {
  const want = model.inference_geo
  for (const m of members) {
    if (m.geo === want) continue
    const theirs = m.geo === undefined ? 'leaves model.inference_geo unset' : `pins model.inference_geo ${JSON.stringify(m.geo)}`
    const ours = want === undefined ? 'this coordinator leaves it unset' : `this coordinator pins ${JSON.stringify(want)}`
    return `${m.at}: agent ${m.id} version ${m.version} ${theirs} but ${ours}; every referenced agent must agree on inference_geo`
  }
  return undefined
}

/** Self entries with the version they now belong to. */
export function stampSelf(m: Multiagent | null, selfId: string, version: number): Multiagent | null {
  if (!m) return null
  const stamp = <E extends RosterEntry>(e: E): E => (e.type === 'agent' && e.id === selfId ? { ...e, version } : e)
  if (m.type === 'coordinator') return { type: 'coordinator', agents: m.agents.map(stamp) }
  const level = (l: AgentsLevel): AgentsLevel => (l.type === 'enabled' ? { ...l, predefined_agents: l.predefined_agents.map(stamp) } : l)
  return { ...m, subagents: level(m.subagents), workflows: level(m.workflows) }
}
