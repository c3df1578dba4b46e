import { fail, inField } from '../../../protocol/errors/fail.js'
import { VaultKind } from '../../../protocol/ops/vault.js'
import type { Agent, AgentReference, AgentsLevel, Tool } from '../../../protocol/schemas/agent.js'
import type { Environment } from '../../../protocol/schemas/environment.js'
import {
  isFileParams,
  isMemoryStoreParams,
  MAX_SESSION_MEMORY_STORES,
  mountPathOf,
  mountsOverlap,
  type ResourceParamsT,
} from '../../../protocol/schemas/resource.js'
import { listedManagers, localBackend, type SandboxBackend } from '../../../sandbox/index.js'
import type { ActorClient, HostContext } from '../../kit/index.js'
import type { BudgetParams, SessionCreateInput } from '../../../protocol/schemas/session.js'
import type { SessionAgent, ThreadAgent } from '../../../protocol/session.js'
import { budgetCents, checkBudgetCreate } from '../billing/index.js'
import type { ModelRef } from '../billing/index.js'
import {
  checkCoordinatorToolNames,
  checkSkillRequirements,
  checkToolGraph,
  geoBreach,
  type Member,
  normalizeModel,
  normalizeServers,
  normalizeTools,
  storedRefs,
  textOrNull,
} from '../../agent/index.js'
import { AgentKind } from '../../../protocol/ops/agent.js'

/**
 * Session admission (SPEC "Sessions", create rules): everything that can refuse a session is checked before
 * anything is written, and the one side effect, the environment reference, is taken last and given back if
 * the environment itself refuses.
 */

/** The agent record a new session snapshots (latest when `version` is omitted). */
export type AgentResolver = (id: string, version?: number) => Promise<Agent>

/**
 * Resolves agents with the agent kind's resolve op: 404 missing, 400 archived or a bad version. Served on this host
 * (the op is placed on any host), one actor request fewer per session create.
 */
export const agentResolver =
  (client: ActorClient): AgentResolver =>
  (id, version) =>
    client.call(AgentKind.ops.resolve, { id, body: { version } })

const threadAgent = (a: Agent | SessionAgent): ThreadAgent => ({
  id: a.id,
  type: 'agent',
  version: a.version,
  name: a.name,
  description: a.description,
  system: a.system,
  model: a.model,
  tools: a.tools,
  mcp_servers: a.mcp_servers,
  skills: a.skills,
  execution_identity: a.execution_identity,
})

/** The immutable snapshot a session runs: the agent version, overrides applied, roster members captured whole. */
export async function snapshotAgent(resolveAgent: AgentResolver, input: SessionCreateInput['agent']): Promise<SessionAgent> {
  const ref: { id: string; version?: number } = typeof input === 'string' ? { id: input } : input
  const agent = await resolveAgent(ref.id, ref.version)
  const snap: SessionAgent = { ...threadAgent(agent), multiagent: null }

  if (typeof input !== 'string' && input.type === 'agent_with_overrides') {
    // effort stays an agent-level setting (SPEC create rule 2): an override changes id, speed or geography.
    if (input.model !== undefined) snap.model = { ...normalizeModel(input.model), ...(agent.model.effort ? { effort: agent.model.effort } : {}) }
    if (input.model !== undefined && typeof input.model !== 'string' && input.model.effort != null) {
      throw fail('invalid_request', "agent.model.effort cannot be overridden on a session; it stays the agent's setting")
    }
    if (input.system !== undefined) snap.system = textOrNull(input.system)
    let tools: Tool[] = snap.tools
    if (input.tools !== undefined) tools = normalizeTools(input.tools ?? [])
    const servers = input.mcp_servers !== undefined ? normalizeServers(input.mcp_servers ?? []) : snap.mcp_servers
    if (input.tools !== undefined || input.mcp_servers !== undefined) {
      prefixed('agent.', () => checkToolGraph(tools, servers))
      snap.tools = tools
      snap.mcp_servers = servers
    }
    if (input.skills?.some((x) => x.type === 'anthropic'))
      throw fail(
        'vendor_skills_unsupported',
        input.skills.findIndex((x) => x.type === 'anthropic'),
      )
    // An override's tools must still serve the skills, and an override's skills the tools (SPEC agents rules).
    if (input.skills !== undefined || input.tools !== undefined) prefixed('agent.', () => checkSkillRequirements(input.skills ?? snap.skills, snap.tools))
    // Resolved and pinned by the create (skills.ts#pinSessionSkills), which puts the concrete versions here.
    if (input.skills !== undefined) snap.skills = []
  }

  if (agent.multiagent) {
    const members: Member[] = []
    const capture = async ({ ref, at }: { ref: AgentReference; at: string }): Promise<ThreadAgent> => {
      // A self copy reflects this session's overrides (SPEC create rule 3).
      if (ref.id === agent.id) return threadAgent(snap)
      const member = await resolveAgent(ref.id, ref.version)
      members.push({ at, id: member.id, version: member.version, geo: member.model.inference_geo })
      return threadAgent(member)
    }
    const captured = new Map<AgentReference, ThreadAgent>()
    for (const r of storedRefs(agent.multiagent)) captured.set(r.ref, await capture(r))
    const m = agent.multiagent
    if (m.type === 'coordinator') {
      snap.multiagent = { type: 'coordinator', agents: m.agents.map((e) => (e.type === 'advisor' ? e : captured.get(e)!)) }
    } else {
      const level = (l: AgentsLevel): AgentsLevel<ThreadAgent> =>
        l.type === 'enabled' ? { ...l, predefined_agents: l.predefined_agents.map((e) => captured.get(e)!) } : l
      snap.multiagent = { type: m.type, advisor: m.advisor, subagents: level(m.subagents), workflows: level(m.workflows) }
    }
    const breach = geoBreach(snap.model, members)
    if (breach) throw fail('invalid_request', `agent: the model override breaks the coordinator roster: ${breach}`)
    // The stored agent passed this check; an override of its tools must too.
    prefixed('agent.', () => checkCoordinatorToolNames(snap.multiagent, snap.tools))
  }
  return snap
}

/** Runs `fn`, putting `prefix` in front of the message of what it throws (a field path one level down). */
export function prefixed(prefix: string, fn: () => void) {
  try {
    fn()
  } catch (err) {
    if (err instanceof Error) err.message = prefix + err.message
    throw err
  }
}

/** Every model the session may run: the coordinator, each roster member and the advisor. */
export function modelsOf(agent: SessionAgent): ModelRef[] {
  const m = agent.multiagent
  const models: ModelRef[] = [agent.model, ...capturedAgents(agent).map((a) => a.model)]
  if (m?.type === 'coordinator') for (const e of m.agents) if (e.type === 'advisor') models.push(e.model)
  if (m?.type === 'multiagent_20261001' && m.advisor.type === 'enabled') models.push(m.advisor.model)
  return models
}

/** The agent definitions a snapshot captured for its multiagent, in order (a coordinator's roster, then predefined lists). */
export function capturedAgents(agent: SessionAgent): ThreadAgent[] {
  const m = agent.multiagent
  if (!m) return []
  if (m.type === 'coordinator') return m.agents.filter((e): e is ThreadAgent => e.type === 'agent')
  return [m.subagents, m.workflows].flatMap((l) => (l.type === 'enabled' ? l.predefined_agents : []))
}

/** The ids of `modelsOf`, as a budget refusal lists them. */
export const modelNames = (agent: SessionAgent): string[] => modelsOf(agent).map((m) => (typeof m === 'string' ? m : m.id))

/** What of a create the rules below read: a session's body, or a deployment's. */
export interface CreateInput {
  resources?: readonly ResourceParamsT[] | null
  vault_ids?: readonly string[] | null
  initial_events?: ReadonlyArray<{ type: string; rubric?: { type: string } }>
  budget?: BudgetParams | null
}

/**
 * Budget, resources, vaults and initial events: the rules that need no stored state. A deployment's create and
 * update check its fields with them too (`on` words the refusal of a resource kind for it).
 */
export function checkCreateInput(b: CreateInput, agent: SessionAgent, on: 'sessions' | 'deployments' = 'sessions'): void {
  checkResources(b.resources ?? [], on)
  checkVaults(b.vault_ids ?? [])
  checkOutcomes(b.initial_events ?? [])
  checkBudget(b.budget ?? null, agent)
}

/**
 * Files (whether each exists is for the copy to find out, actors/session/handlers/resources.ts): no two may share a mount
 * path, nor may one lie beneath another. Memory stores: at most 8, each named once (whether each exists and is not
 * archived is for its attach to find out, memory.ts; a deployment's admission asks at its create and update). The
 * other kinds never will be here.
 */
export function checkResources(resources: readonly ResourceParamsT[], on: 'sessions' | 'deployments'): void {
  const mounts: Array<{ at: number; path: string }> = []
  const stores = new Map<string, number>()
  for (const [i, r] of resources.entries()) {
    if (isMemoryStoreParams(r)) {
      const first = stores.get(r.memory_store_id)
      if (first !== undefined)
        throw fail('invalid_request', `resources[${i}].memory_store_id: ${r.memory_store_id} is attached twice (also at resources[${first}])`)
      if (stores.size === MAX_SESSION_MEMORY_STORES) throw fail('too_many_memory_stores', i, MAX_SESSION_MEMORY_STORES)
      stores.set(r.memory_store_id, i)
      continue
    }
    if (isFileParams(r)) {
      const path = mountPathOf(r)
      const clash = mounts.find((m) => mountsOverlap(m.path, path))
      if (clash) throw fail('mount_path_conflict', `resources[${i}].mount_path`, path, `resources[${clash.at}]`, clash.path)
      mounts.push({ at: i, path })
      continue
    }
    throw fail('resource_unsupported', i, String(r.type), on)
  }
}

/** Each vault named once (an empty or malformed id is the schema's 400); whether they exist is `checkVaultRefs`'s. */
export function checkVaults(vaults: readonly string[]): void {
  vaults.forEach((v, i) => {
    const j = vaults.indexOf(v)
    if (j !== i) throw fail('invalid_request', `vault_ids[${i}]: ${v} appears twice (also at index ${j})`)
  })
}

/**
 * Vault admission (SPEC create rule 7): the keyring is configured, and each vault named exists (404 naming
 * `vault_ids[i]`) and is not archived (400), asked of the vault kind's owners, in order.
 */
export async function checkVaultRefs(ctx: Pick<HostContext, 'client' | 'settings' | 'keyringConflict'>, vaults: readonly string[]): Promise<void> {
  if (!vaults.length) return
  if (!ctx.settings.keyring) throw fail('vaults_unavailable')
  const conflict = ctx.keyringConflict()
  if (conflict) throw fail('keyring_mismatch', conflict)
  for (const [i, id] of vaults.entries()) {
    const vault = await ctx.client.call(VaultKind.ops.get, { id }).catch(inField(`vault_ids[${i}]`))
    if (vault.archived_at) {
      prefixed(`vault_ids[${i}]: `, () => {
        throw fail('vault_archived', id)
      })
    }
  }
}

/** One outcome at a time (outcomes.ts): initial events define at most one. */
export function checkOutcomes(events: ReadonlyArray<{ type: string }>): void {
  const first = events.findIndex((e) => e.type === 'user.define_outcome')
  const second = events.findIndex((e, i) => i > first && e.type === 'user.define_outcome')
  if (first >= 0 && second > first) throw fail('outcome_in_progress', `initial_events[${second}]`, `defined at initial_events[${first}]`)
}

/** A budget needs a list price for every model the agent may run. */
export function checkBudget(budget: BudgetParams | null, agent: SessionAgent): void {
  if (!budget) return
  const code = checkBudgetCreate({ budget: budgetCents(budget) ?? null, models: modelsOf(agent) })
  if (code) throw fail('model_not_budgetable', modelNames(agent))
}

/**
 * What this host's sessions' sandboxes can enforce: its own backend's, or, when they run on sandbox hosts, whether any
 * sandbox host heard enforces limited networking (none heard at all: admitted, the sessions wait for one; a session
 * is then bound only to a host that enforces its policy, actors/workdir/remote-sandbox.ts).
 */
export function sandboxTraits(ctx: Pick<HostContext, 'settings' | 'sandboxHosts'>): SandboxTraits {
  const roster = ctx.sandboxHosts
  if (!roster) return ctx.settings.sandbox ?? localBackend
  const live = roster.live()
  return {
    enforcesNetwork: !live.length || live.some((h) => roster.value(h)?.enforces_network),
    kind: !live.length || live.some((h) => roster.value(h)?.kind === 'isolated') ? 'isolated' : 'local',
  }
}

export type SandboxTraits = Pick<SandboxBackend, 'enforcesNetwork' | 'kind'>

/**
 * SPEC session create rule 9: custom skills run only where tools run in a container-backed sandbox, the isolated
 * backend (bundles bound read-only at /workspace/skills). A self-hosted environment's tools run on the client; the
 * local backend runs them on the host, with no mounts.
 */
export function checkSkillsRun(env: Environment, backend: SandboxTraits): void {
  if (env.config.type === 'self_hosted') throw fail('skills_not_run', `environment ${env.id} is self_hosted (its tools run on the client)`)
  if (backend.kind !== 'isolated') {
    throw fail('skills_not_run', "this server's sessions run tools on the local backend (TROUPE_SANDBOX=local, or bubblewrap could not start here)")
  }
}

/**
 * A limited environment lets sessions reach MCP servers only with `allow_mcp_servers` (issue 43 point 4): an agent, or
 * a member its roster captured, whose `mcp_toolset` names a server is refused without it (a deployment's run records
 * `mcp_egress_blocked_error`). The environment a session captured never changes, so its create and the updates of its
 * agent are the only moments to check.
 */
export function checkMcpEgress(env: { id: string; config: Environment['config'] }, agent: SessionAgent): void {
  const c = env.config
  if (c.type !== 'cloud' || c.networking.type !== 'limited' || c.networking.allow_mcp_servers) return
  const agents: Array<[string, Pick<ThreadAgent, 'tools'>]> = [
    ['agent.tools', agent],
    ...capturedAgents(agent).map((a): [string, ThreadAgent] => [`agent (roster member ${a.id}): tools`, a]),
  ]
  for (const [at, a] of agents) {
    const i = a.tools.findIndex((x) => x.type === 'mcp_toolset')
    const toolset = a.tools[i]
    if (toolset?.type === 'mcp_toolset') throw fail('mcp_egress_blocked', `${at}[${i}]`, toolset.mcp_server_name, env.id)
  }
}

/**
 * Limited networking and packages need a backend whose sandboxes reach the network only through their egress proxy
 * (the isolated one with socat), which also installs packages into the session's own prefix (SPEC environments
 * rule 2); the local backend runs tools on the host itself.
 */
export function checkEnvironment(env: Environment, backend: SandboxTraits): void {
  if (env.config.type !== 'cloud' || backend.enforcesNetwork) return
  if (env.config.networking.type === 'limited') throw fail('networking_unenforceable', env.id)
  const listed = listedManagers(env.config.packages)
  if (listed.length) throw fail('packages_unsupported', env.id, listed)
}
