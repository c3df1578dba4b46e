import type { ContentBlockParam, ServerToolUseBlockParam } from '@anthropic-ai/sdk/resources/messages'
import type { ServerToolResultBlock } from '../../../protocol/session-events.js'

/*
 * A web tool's use and result (turn/web-tools.ts) as the conversation hands them back to the model: blocks of the
 * assistant message they came in, the provider's id and result block as stored on the events.
 */

export const serverToolUse = (id: string, name: string, input: Record<string, unknown>): ContentBlockParam => ({
  type: 'server_tool_use',
  id,
  name: name as ServerToolUseBlockParam['name'],
  input,
})

/** The result block as the provider sent it; its shape is the provider's, stored whole. */
export const serverToolResult = (block: ServerToolResultBlock): ContentBlockParam => block as ContentBlockParam

/** `blocks` without a server tool use that no result block of theirs answers (the Messages API refuses one alone). */
export function pairedServerBlocks(blocks: ContentBlockParam[]): ContentBlockParam[] {
  const answered = new Set(blocks.flatMap((b) => (b.type === 'web_search_tool_result' || b.type === 'web_fetch_tool_result' ? [b.tool_use_id] : [])))
  return blocks.filter((b) => b.type !== 'server_tool_use' || answered.has(b.id))
}
