import type { McpTool } from './connection.js'

/** At most this many tools of one server are offered (a hostile server's list is cut, not the turn). */
export const MAX_SERVER_TOOLS = 500
/** At most this many bytes of one server's tool definitions go into each model request; the tools past it are cut. */
export const MAX_SERVER_TOOLS_BYTES = 1024 * 1024
/** A tool whose input schema is larger than this, or nested deeper than `MAX_SCHEMA_DEPTH`, is not offered. */
export const MAX_SCHEMA_BYTES = 64 * 1024
export const MAX_SCHEMA_DEPTH = 32
/** At most this many pages of a server's `tools/list` are read. */
export const MAX_LIST_PAGES = 50
/** A tool's description past this is cut. */
export const MAX_DESCRIPTION_CHARS = 10_000

/** The tools as a server lists them (the SDK has checked their shape), before any is offered. */
type Listed = { name: string; description?: string; inputSchema: unknown }

/**
 * What of a server's tool list the model is offered: every request carries it, so a hostile server (thousands of
 * tools, megabytes of schema, a schema nested past what the Messages API reads) must not make every request of the
 * session fail or cost what it likes. Tools past the caps are left out; `skipped` counts them for the log.
 */
export class ToolList {
  readonly tools: McpTool[] = []
  skipped = 0
  private bytes = 0

  /** Whether the list takes more tools. */
  get full(): boolean {
    return this.tools.length >= MAX_SERVER_TOOLS || this.bytes >= MAX_SERVER_TOOLS_BYTES
  }

  add(t: Listed): void {
    if (this.full) return void this.skipped++
    const schema = JSON.stringify(t.inputSchema ?? {})
    if (!t.name || schema.length > MAX_SCHEMA_BYTES || depthOf(t.inputSchema) > MAX_SCHEMA_DEPTH) return void this.skipped++
    const description = t.description && t.description.length > MAX_DESCRIPTION_CHARS ? `${t.description.slice(0, MAX_DESCRIPTION_CHARS)}…` : t.description
    const size = schema.length + (description?.length ?? 0) + t.name.length
    if (this.bytes + size > MAX_SERVER_TOOLS_BYTES) {
      this.bytes = MAX_SERVER_TOOLS_BYTES
      return void this.skipped++
    }
    this.bytes += size
    this.tools.push({ name: t.name, description, inputSchema: t.inputSchema as Record<string, unknown> })
  }
}

/** How deep `v` nests objects and arrays (a scalar is 0); stops counting past the cap. */
function depthOf(v: unknown, depth = 0): number {
  if (depth > MAX_SCHEMA_DEPTH || v === null || typeof v !== 'object') return depth
  let max = depth + 1
  for (const x of Array.isArray(v) ? v : Object.values(v)) {
    max = Math.max(max, depthOf(x, depth + 1))
    if (max > MAX_SCHEMA_DEPTH) break
  }
  return max
}
