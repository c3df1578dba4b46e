import type { ToolResult } from '../types.js'

/** A line from the server to the tool server: run a file tool, or abort the one with that id. */
export type ToolRequest = { id: number; name: string; input: unknown } | { id: number; abort: true }

/** A line back: the result of the call with that id. */
export interface ToolResponse {
  id: number
  result: ToolResult
}
