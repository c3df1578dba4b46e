import { fail } from '../../../protocol/errors/fail.js'
import type { PayloadOf } from '../../../protocol/session-events.js'
import { fileResources, MAX_SESSION_RESOURCES, mountsOverlap } from '../../../protocol/schemas/resource.js'
import { patchMetadata, sameJson } from '../../../protocol/schemas/common.js'
import type { SessionUpdateInput } from '../../../protocol/schemas/session.js'
import type { CapturedEnvironment, Session } from '../../../protocol/session.js'
import { checkCoordinatorToolNames, checkSkillRequirements, checkToolGraph, normalizeServers, normalizeTools } from '../../agent/index.js'
import { budgetCents, checkBudgetUpdate } from '../billing/index.js'
import type { UsageTotals } from '../billing/index.js'
import { listCostCents } from '../billing/index.js'
import { checkMcpEgress, modelNames, modelsOf, prefixed } from './admission.js'

/** What an update is checked against: the session now, whether it has work, and what it has spent. */
export interface UpdateTarget {
  session: Session
  /** A turn runs or input waits for one: the agent may not change under it. */
  busy: boolean
  createdWithBudget: boolean
  budgetRemoved: boolean
  /** What the session has spent so far, every thread's together. */
  consumed: UsageTotals
  /** The environment the session captured at its create. */
  env: CapturedEnvironment
}

/**
 * The fields of `session.updated` an update makes (empty: it changes nothing), or the 4xx that refuses it. Pure: the
 * actor applies them by storing the event (SPEC sessions update rules: title, metadata patched, the agent's tools and
 * MCP servers while idle, the budget within its rules).
 */
export function updateChanges(t: UpdateTarget, b: SessionUpdateInput): PayloadOf<'session.updated'> {
  const s = t.session
  if (s.archived_at) throw fail('session_archived', s.id)
  const changes: PayloadOf<'session.updated'> = {}
  if (b.title !== undefined && b.title !== s.title) changes.title = b.title
  if (b.metadata) {
    const m = patchMetadata(s.metadata, b.metadata)
    if (!sameJson(m, s.metadata)) changes.metadata = m
  }
  if (b.agent) {
    if (t.busy) throw fail('session_running', s.id)
    const tools = b.agent.tools !== undefined ? normalizeTools(b.agent.tools ?? []) : s.agent.tools
    const servers = b.agent.mcp_servers !== undefined ? normalizeServers(b.agent.mcp_servers ?? []) : s.agent.mcp_servers
    prefixed('agent.', () => checkToolGraph(tools, servers))
    // Its skills stay (a session update cannot change them), so the tools must still serve them.
    if (b.agent.tools !== undefined) prefixed('agent.', () => checkSkillRequirements(s.agent.skills, tools))
    prefixed('agent.', () => checkCoordinatorToolNames(s.agent.multiagent, tools))
    const agent = { ...s.agent, tools, mcp_servers: servers }
    checkMcpEgress({ id: s.environment_id, config: t.env }, agent)
    if (!sameJson(agent, s.agent)) changes.agent = agent
  }
  if (b.budget !== undefined) {
    const next = b.budget === null ? null : budgetCents(b.budget)!
    const current = s.budget ? budgetCents(s.budget)! : null
    const code = checkBudgetUpdate({
      createdWithBudget: t.createdWithBudget,
      budgetRemoved: t.budgetRemoved,
      current,
      next,
      consumedCents: t.consumed,
      models: modelsOf(s.agent),
    })
    if (code === 'budget_not_raised') throw fail(code, listCostCents(t.consumed))
    if (code === 'model_not_budgetable') throw fail(code, modelNames(s.agent))
    if (code) throw fail(code)
    if (next !== current) changes.budget = b.budget
  }
  return changes
}

/** Whether a resource may be added at `mountPath` now: the session idle, not archived, not full, the path free. */
export function checkAddable(session: Session, busy: boolean, mountPath: string): void {
  checkChangeable(session, busy)
  const all = session.resources
  if (all.length >= MAX_SESSION_RESOURCES) throw fail('too_many_resources', MAX_SESSION_RESOURCES)
  // Memory stores mount beneath /mnt/memory, files beneath /mnt/session/uploads: only files can clash.
  const clash = fileResources(all).find((r) => mountsOverlap(r.mount_path, mountPath))
  if (clash) throw fail('mount_path_conflict', 'mount_path', mountPath, clash.id, clash.mount_path)
}

/** A session's resources change only while it is idle and not archived. */
export function checkChangeable(session: Session, busy: boolean): void {
  if (session.archived_at) throw fail('session_archived', session.id)
  if (busy) throw fail('session_busy_resources', session.id)
}
