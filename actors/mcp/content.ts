import type { ToolResultContent } from '../../protocol/session-events.js'

/** At most this many characters of an MCP result reach the session (an event must fit its stream; see docs/ARCHITECTURE.md). */
export const MAX_RESULT_CHARS = 200_000

const IMAGE_TYPES = new Set(['image/jpeg', 'image/png', 'image/gif', 'image/webp'])
type ImageMedia = 'image/jpeg' | 'image/png' | 'image/gif' | 'image/webp'

/** One block of an MCP `tools/call` result, as the SDK parses it (only the fields read here). */
export interface McpBlock {
  type: string
  text?: string
  data?: string
  mimeType?: string
  uri?: string
  name?: string
  resource?: { uri?: string; mimeType?: string; text?: string; blob?: string }
}

/**
 * An MCP result's content as a tool result's: text and the images the Messages API takes as they are; an embedded
 * text resource as its text; anything else (audio, links, binary resources) as a line saying what it was, since the
 * model could not read it. Structured content without blocks is given as its JSON. Past `MAX_RESULT_CHARS` the text
 * is cut, with a note.
 */
export function toResultContent(blocks: readonly McpBlock[], structured?: unknown): ToolResultContent[] {
  const out: ToolResultContent[] = []
  let chars = 0
  let cut = false
  const text = (s: string) => {
    if (cut) return
    const room = MAX_RESULT_CHARS - chars
    if (s.length > room) {
      out.push({ type: 'text', text: `${s.slice(0, room)}\n[the MCP result was cut at ${MAX_RESULT_CHARS} characters]` })
      cut = true
      chars = MAX_RESULT_CHARS
      return
    }
    chars += s.length
    out.push({ type: 'text', text: s })
  }
  for (const b of blocks) {
    if (b.type === 'text' && typeof b.text === 'string') text(b.text)
    else if (b.type === 'image' && b.data && b.mimeType && IMAGE_TYPES.has(b.mimeType) && chars + b.data.length <= MAX_RESULT_CHARS) {
      chars += b.data.length
      out.push({ type: 'image', source: { type: 'base64', data: b.data, media_type: b.mimeType as ImageMedia } })
    } else if (b.type === 'resource' && typeof b.resource?.text === 'string') text(b.resource.text)
    else text(`[${b.type}${b.mimeType ? ` ${b.mimeType}` : ''}${b.uri || b.resource?.uri ? ` ${b.uri ?? b.resource?.uri}` : ''} not shown]`)
  }
  if (!out.length && structured !== undefined) text(JSON.stringify(structured))
  return out
}
