import { fail } from '../../protocol/errors/fail.js'
import type { Agent, ModelConfig, Multiagent, MultiagentParamsT, RosterEntry } from '../../protocol/schemas/agent.js'
import type { AgentStore } from './state.js'

/**
 * Coordinator rosters (SPEC "Coordinator topology", "Agent validation rules"). Input entries are resolved
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

/** A referenced agent version, as the inference_geo rule needs it. */
export interface Member {
  index: number
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

export async function resolveRoster(input: MultiagentParamsT, selfId: string, store: AgentStore): Promise<ResolvedRoster> {
  if (input.type !== 'coordinator') throw fail('multiagent_topology_unsupported')
  const entries = input.agents
  if (entries.length < 1 || entries.length > MAX_ROSTER) {
    throw fail('invalid_request', `multiagent.agents: a coordinator roster has 1 to ${MAX_ROSTER} entries (got ${entries.length})`)
  }

  // Shape rules first, in order, so the first broken entry is the one named.
  type Ref = { index: number; id: string; version?: number }
  const refs: Ref[] = []
  const seen = new Map<string, number>()
  let selfAt: number | undefined
  let advisorAt: number | undefined
  const isAdvisor = (e: (typeof entries)[number]) => typeof e !== 'string' && e.type === 'advisor'
  const advisors = entries.flatMap((e, i) => (isAdvisor(e) ? [i] : []))
  if (advisors.length > 1) throw fail('invalid_request', `${at(advisors[1]!)}: at most one advisor entry is allowed (another is ${at(advisors[0]!)})`)
  entries.forEach((e, i) => {
    if (typeof e !== 'string' && e.type === 'advisor') {
      if (i !== entries.length - 1) throw fail('invalid_request', `${at(i)}: the advisor entry must be the last entry of the roster`)
      advisorAt = i
      return
    }
    if (typeof e !== 'string' && e.type === 'self') {
      if (selfAt !== undefined) throw fail('invalid_request', `${at(i)}: {"type":"self"} may appear at most once (already at ${at(selfAt)})`)
      selfAt = i
      seen.set(selfId, i)
      return
    }
    const id = typeof e === 'string' ? e : e.id
    const version = typeof e === 'string' ? undefined : e.version
    const j = seen.get(id)
    if (j !== undefined) {
      throw fail('invalid_request', `${at(i)}: agent ${id} is already in the roster (${at(j)}); roster entries must be distinct agents`)
    }
    if (id === selfId) throw fail('invalid_request', `${at(i)}: ${id} is this agent; reference it with {"type":"self"}`)
    seen.set(id, i)
    refs.push({ index: i, id, ...(version !== undefined ? { version } : {}) })
  })
  if (refs.length === 0 && selfAt === undefined) {
    throw fail('invalid_request', 'multiagent.agents: a coordinator roster needs at least one agent besides the advisor')
  }

  const resolved = await Promise.all(refs.map((r) => resolveRef(r, store)))
  const byIndex = new Map(resolved.map((m) => [m.index, m]))
  const agents: RosterEntry[] = []
  entries.forEach((e, i) => {
    if (i === selfAt) agents.push({ type: 'agent', id: selfId, version: SELF_VERSION })
    else if (i === advisorAt) agents.push({ type: 'advisor', model: (e as { model: string }).model })
    else {
      const m = byIndex.get(i)!
      agents.push({ type: 'agent', id: m.id, version: m.version })
    }
  })
  return { multiagent: { type: 'coordinator', agents }, members: resolved }
}

async function resolveRef(r: { index: number; id: string; version?: number }, store: AgentStore): Promise<Member> {
  const head = (await store.head(r.id))?.agent
  if (!head) throw fail('roster_member_not_found', at(r.index), r.id)
  if (head.archived_at) throw fail('roster_member_archived', at(r.index), r.id)
  let rec: Agent | undefined = head
  if (r.version !== undefined) {
    if (r.version > head.version) {
      throw fail('invalid_request', `${at(r.index)}: agent ${r.id} has no version ${r.version} (latest is ${head.version})`)
    }
    rec = await store.version(head, r.version)
    if (!rec) throw fail('invalid_request', `${at(r.index)}: version ${r.version} of agent ${r.id} is not readable`)
  }
  if (rec.multiagent) {
    throw fail(
      'invalid_request',
      `${at(r.index)}: agent ${r.id} version ${rec.version} is itself a coordinator (it has multiagent); rosters are one level deep`,
    )
  }
  return { index: r.index, id: r.id, version: rec.version, geo: rec.model.inference_geo }
}

/** The members of a stored roster (for re-checking inference_geo when only the model changes). */
export async function storedMembers(m: Multiagent, selfId: string, store: AgentStore): Promise<Member[]> {
  const refs = m.agents
    .map((e, index) => ({ e, index }))
    .filter((x): x is { e: Extract<RosterEntry, { type: 'agent' }>; index: number } => x.e.type === 'agent' && x.e.id !== selfId)
  return Promise.all(
    refs.map(async ({ e, index }) => {
      const head = (await store.head(e.id))?.agent
      const rec = head ? await store.version(head, e.version) : undefined
      return { index, id: e.id, version: e.version, geo: rec?.model.inference_geo }
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
    return `${at(m.index)}: agent ${m.id} version ${m.version} ${theirs} but ${ours}; every referenced agent must agree on inference_geo`
  }
  return undefined
}

/** Self entries with the version they now belong to. */
export function stampSelf(m: Multiagent | null, selfId: string, version: number): Multiagent | null {
  if (!m) return null
  return { type: 'coordinator', agents: m.agents.map((e) => (e.type === 'agent' && e.id === selfId ? { type: 'agent', id: selfId, version } : e)) }
}
