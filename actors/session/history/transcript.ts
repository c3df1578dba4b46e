import type { MessageParam } from '@anthropic-ai/sdk/resources/messages'

/**
 * A conversation as another model reads it (the advisor reviewing it, the grader judging it): each turn's text, tool
 * calls and results, in order.
 */
export function transcript(messages: readonly MessageParam[]): string {
  const lines: string[] = []
  for (const m of messages) {
    const blocks = typeof m.content === 'string' ? [{ type: 'text' as const, text: m.content }] : m.content
    for (const b of blocks) {
      if (b.type === 'text') lines.push(`[${m.role}] ${b.text}`)
      else if (b.type === 'tool_use' || b.type === 'server_tool_use') lines.push(`[${m.role} calls ${b.name}] ${JSON.stringify(b.input)}`)
      else if (b.type === 'web_search_tool_result' && Array.isArray(b.content)) {
        lines.push(`[web_search result] ${b.content.map((r) => `${r.title} <${r.url}>`).join('; ')}`)
      } else if (b.type === 'tool_result') {
        const content = typeof b.content === 'string' ? b.content : (b.content ?? []).map((c) => (c.type === 'text' ? c.text : `(${c.type})`)).join('\n')
        lines.push(`[tool result${b.is_error ? ', error' : ''}] ${content}`)
      } else lines.push(`[${m.role}] (${b.type})`)
    }
  }
  return `The conversation so far:\n\n${lines.join('\n\n')}`
}
