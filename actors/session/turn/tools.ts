import type { Tool as ApiTool } from '@anthropic-ai/sdk/resources/messages'
import type { AgentToolset, Policy } from '../../../protocol/schemas/agent.js'
import type { SessionAgent } from '../../../protocol/session.js'
import type { AgentToolUseEvent } from '../../../protocol/session-events.js'
import { BUILTIN_TOOL_NAMES, builtinToolDefinitions } from '../../../sandbox/index.js'
import { SKILL_TOOL, skillTool } from './skill-context.js'
import { coordinatorTools, type Member } from './roster.js'
import type { SessionSkill } from '../history/index.js'

/** How one tool name of a session's agent is handled. */
export type ToolRoute = { kind: 'builtin'; policy: Policy } | { kind: 'skill' } | { kind: 'coordinator' } | { kind: 'custom' } | { kind: 'unknown' }

/** What a thread offers beyond its agent's tools: the `Skill` dispatcher, a coordinator's tools (threads.ts). */
export interface ThreadTools {
  skills?: boolean
  /** The names of the coordinator tools the thread has (`coordinatorToolNames`). */
  coordinator?: ReadonlySet<string>
}

/** A coordinator's primary thread: its roster and its advisor. */
export interface Roster {
  members: readonly Member[]
  advisor: Member | undefined
}

const toolset = (agent: SessionAgent) => agent.tools.find((t): t is AgentToolset => t.type === 'agent_toolset_20260401')

/** The built-in tools the agent enables, each with its permission policy. */
function enabledBuiltins(agent: SessionAgent): Map<string, Policy> {
  const out = new Map<string, Policy>()
  const ts = toolset(agent)
  if (!ts) return out
  for (const name of BUILTIN_TOOL_NAMES) {
    const cfg = ts.configs.find((c) => c.name === name)
    const enabled = cfg?.enabled ?? ts.default_config.enabled
    if (enabled) out.set(name, cfg?.permission_policy ?? ts.default_config.permission_policy)
  }
  return out
}

/**
 * The tools offered to the model but MCP servers' (mcp-tools.ts adds those): enabled built-ins of the agent toolset, the
 * `Skill` dispatcher when the session runs skills (skill-context.ts), and custom tools. The web tools are the
 * provider's server tools, added beside these (web-tools.ts).
 */
export function toolDefinitions(agent: SessionAgent, skills: readonly SessionSkill[] = [], contextWindow = 0, roster?: Roster): ApiTool[] {
  const defs: ApiTool[] = builtinToolDefinitions([...enabledBuiltins(agent).keys()]) as ApiTool[]
  if (skills.length) defs.push(skillTool(skills, contextWindow))
  if (roster) defs.push(...coordinatorTools(roster.members, roster.advisor))
  for (const t of agent.tools) {
    if (t.type === 'custom') defs.push({ name: t.name, description: t.description, input_schema: t.input_schema as ApiTool['input_schema'] })
  }
  return defs
}

/**
 * `skills`: the thread runs skills, so `Skill` is its dispatcher (no custom tool may take the name then);
 * `coordinator`: a coordinator's primary thread, whose `list_agents` and `send_to_agent` are the session's own.
 */
export function routeTool(agent: SessionAgent, name: string, offers: ThreadTools = {}): ToolRoute {
  if (offers.skills && name === SKILL_TOOL) return { kind: 'skill' }
  if (offers.coordinator?.has(name)) return { kind: 'coordinator' }
  if (agent.tools.some((t) => t.type === 'custom' && t.name === name)) return { kind: 'custom' }
  const policy = enabledBuiltins(agent).get(name)
  return policy ? { kind: 'builtin', policy } : { kind: 'unknown' }
}

/** The permission fields of an agent.tool_use event (WIRE §7.2). `auto` allows: no risk classifier runs here. */
export function permissionFields(policy: Policy): Pick<AgentToolUseEvent, 'evaluated_permission' | 'evaluation'> {
  if (policy.type === 'always_ask') return { evaluated_permission: 'ask', evaluation: { type: 'always_ask' } }
  if (policy.type === 'auto') return { evaluated_permission: 'allow', evaluation: { type: 'auto', evaluated_permission: { type: 'allow' } } }
  return { evaluated_permission: 'allow', evaluation: { type: 'always_allow' } }
}
