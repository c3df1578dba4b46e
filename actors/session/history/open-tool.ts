import type { ToolResultContent } from '../../../protocol/session-events.js'

/** A tool use of the last model response that has no result yet. */
export interface OpenTool {
  eventId: string
  /** builtin: the service runs it; custom: a custom tool; client: any tool of a self-hosted session; mcp: a tool of an MCP server. */
  kind: 'builtin' | 'custom' | 'client' | 'mcp'
  /** The tool's name (an MCP tool's on its server, which may differ from the name the model used: turn/mcp-tools.ts). */
  name: string
  /** An MCP tool's server (`mcp_servers[].name`). */
  server?: string
  input: Record<string, unknown>
  /** Waits for a user.tool_confirmation before it may run (always_ask). */
  ask: boolean
  confirmation?: { result: 'allow' | 'deny'; deny_message?: string | null }
  /**
   * A `send_to_agent` parked on its child thread (threads.ts), set while the turn parks: the child's events the
   * client must answer, or `budget` when the child stopped at the session's budget. Never stored.
   */
  parkedOn?: string[] | 'budget'
}

export interface ToolOutcome {
  content?: ToolResultContent[]
  is_error?: boolean | null
}
