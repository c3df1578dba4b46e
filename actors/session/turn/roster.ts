import type { Tool as ApiTool } from '@anthropic-ai/sdk/resources/messages'
import { idFromKey } from '../../../protocol/ids.js'
import type { AdvisorEntry } from '../../../protocol/schemas/agent.js'
import type { SessionAgent, ThreadAgent } from '../../../protocol/session.js'
import { textResult, type ToolResult } from '../../../sandbox/types.js'
import { ADVISOR_TOOL, LIST_AGENTS, SEND_TO_AGENT } from '../../agent/index.js'

export { ADVISOR_TOOL, LIST_AGENTS, SEND_TO_AGENT }

export const ADVISOR_NAME = 'vendor.advisor'

/** What the advisor is told it is for; the conversation it reviews follows as one message. */
const ADVISOR_SYSTEM = [
  'You are an advisor to an AI agent working on a task. You are shown its conversation so far: the requests it got, what',
  'it said, the tools it called and what they returned. Review the work: point out mistakes, risks and anything missed,',
  'and recommend the next steps. Be concise and specific; you cannot call tools.',
].join(' ')

/** Child threads a session may start: each send starts one, so this bounds a coordinator's sends. */
export const MAX_CHILD_THREADS = 100

/** A roster member as the coordinator's tools name it. */
export interface Member {
  /** Its agent's name; a later member of the same name gets ` #2`, ` #3`… so every member can be addressed. */
  name: string
  /** The definition its threads run. */
  agent: ThreadAgent
  /** What its threads show as their `agent` (the advisor's roster entry, for the advisor). */
  shown: ThreadAgent | AdvisorEntry
}

/**
 * The coordinator's members, in roster order (the advisor is not one: it has no definition to run). A
 * `multiagent_20261001` agent's are its `subagents.predefined_agents` (its workflows never run: not built).
 */
export function rosterOf(agent: SessionAgent): Member[] {
  const seen = new Map<string, number>()
  const out: Member[] = []
  const m = agent.multiagent
  const entries = m?.type === 'coordinator' ? m.agents : m?.subagents.type === 'enabled' ? m.subagents.predefined_agents : []
  for (const e of entries) {
    if (e.type !== 'agent') continue
    const n = (seen.get(e.name) ?? 0) + 1
    seen.set(e.name, n)
    out.push({ name: n === 1 ? e.name : `${e.name} #${n}`, agent: e, shown: e })
  }
  return out
}

/**
 * The roster's advisor (SPEC "Coordinator topology"): offered to the primary thread only as a no-argument tool, never
 * a member (not listed, not a send's target). Its threads run this definition: the entry's model, tool-free.
 */
export function advisorOf(agent: SessionAgent): Member | undefined {
  const m = agent.multiagent
  // A multiagent_20261001 advisor shows on its threads as a coordinator's roster entry would.
  const entry: AdvisorEntry | undefined =
    m?.type === 'coordinator'
      ? m.agents.find((e): e is AdvisorEntry => e.type === 'advisor')
      : m?.advisor.type === 'enabled'
        ? { type: 'advisor', model: m.advisor.model }
        : undefined
  if (!entry) return undefined
  const definition: ThreadAgent = {
    id: ADVISOR_NAME,
    type: 'agent',
    version: 1,
    name: ADVISOR_NAME,
    description: null,
    system: ADVISOR_SYSTEM,
    model: { id: entry.model },
    tools: [],
    mcp_servers: [],
    skills: [],
    execution_identity: agent.execution_identity,
  }
  return { name: ADVISOR_NAME, agent: definition, shown: entry }
}

/** The id of the advisor thread a call starts: derived from the call's tool use, as a send's child. */
export const advisorThreadId = (toolUseId: string): string => idFromKey('sthr', 'advisor', toolUseId)

/** The id of the child a send starts: derived from the send's tool use, so one send never makes two children. */
export const childThreadId = (toolUseId: string): string => idFromKey('sthr', 'send_to_agent', toolUseId)

/** The coordinator tools, offered to a coordinator's primary thread only: the roster's, and the advisor's. */
export function coordinatorTools(members: readonly Member[], advisor: Member | undefined): ApiTool[] {
  const tools: ApiTool[] = []
  if (advisor) {
    tools.push({
      name: ADVISOR_TOOL,
      description:
        'Asks your advisor, a separate model, to review your work so far (it sees this conversation) and recommend next steps. Takes no input; returns the review.',
      input_schema: { type: 'object', properties: {} },
    })
  }
  if (!members.length) return tools
  return [
    ...tools,
    {
      name: LIST_AGENTS,
      description: 'Lists the agents you can delegate to with send_to_agent: each one’s name and description.',
      input_schema: { type: 'object', properties: {} },
    },
    {
      name: SEND_TO_AGENT,
      description: [
        'Sends a task to one of your agents and waits for its answer, which this tool returns. The agent starts afresh',
        'for each task (it does not see this conversation, nor earlier tasks): say everything it needs in the message.',
        'Several calls in one response run at the same time.',
      ].join(' '),
      input_schema: {
        type: 'object',
        properties: {
          agent: { type: 'string', enum: members.map((m) => m.name), description: 'The agent’s name, as list_agents gives it' },
          message: { type: 'string', description: 'The task, complete in itself' },
        },
        required: ['agent', 'message'],
      },
    },
  ]
}

/** The names of the tools a coordinator's primary thread has (what routes to `Coordinator`). */
export const coordinatorToolNames = (members: readonly Member[], advisor: Member | undefined): ReadonlySet<string> =>
  new Set([...(advisor ? [ADVISOR_TOOL] : []), ...(members.length ? [LIST_AGENTS, SEND_TO_AGENT] : [])])

/** What `list_agents` answers. */
export function listAgents(members: readonly Member[]): ToolResult {
  return textResult(JSON.stringify(members.map((m) => ({ name: m.name, description: m.agent.description ?? null }))))
}
