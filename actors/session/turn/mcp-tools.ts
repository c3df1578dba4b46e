import { createHash } from 'node:crypto'
import type { MessageParam, Tool as ApiTool } from '@anthropic-ai/sdk/resources/messages'
import type { McpToolset, Policy } from '../../../protocol/schemas/agent.js'
import type { SessionAgent } from '../../../protocol/session.js'
import { McpFailure, type McpPool, type McpTool } from '../../mcp/index.js'
import type { Emitter } from './types.js'

/** One MCP tool offered to the model: the name it is offered under, its server, its name there, its permission. */
export interface McpEntry {
  offered: string
  server: string
  tool: string
  policy: Policy
}

/** The Messages API's rule for a tool's name. */
const API_NAME = /^[a-zA-Z0-9_-]{1,128}$/
const sanitize = (s: string) => s.replace(/[^a-zA-Z0-9_-]/g, '_')

/** `name` cut to the API's 128 characters, a digest of the whole kept at its end so that two long names stay apart. */
function fit(name: string): string {
  if (name.length <= 128) return name
  return `${name.slice(0, 119)}_${createHash('sha256').update(name).digest('hex').slice(0, 8)}`
}

/** The name a tool of `server` is offered under when its own cannot be: `<server>__<tool>`, made a valid API name. */
export const prefixedName = (server: string, tool: string) => fit(`${sanitize(server)}__${sanitize(tool)}`)

/**
 * The names MCP tools are offered under (docs/ARCHITECTURE.md, "MCP toolsets"): a tool's own name when it is a valid API
 * tool name that no other tool of the request has (the built-in, custom and service tools offered, `taken`, and the
 * tools of the agent's other servers); otherwise `<server>__<tool>`, and a `_2`, `_3`… when even that is taken. The
 * same tools in the same order always get the same names.
 */
export function offeredNames(entries: ReadonlyArray<{ server: string; tool: string }>, taken: ReadonlySet<string>): string[] {
  const count = new Map<string, number>()
  for (const e of entries) count.set(e.tool, (count.get(e.tool) ?? 0) + 1)
  const used = new Set(taken)
  return entries.map((e) => {
    const own = API_NAME.test(e.tool) && count.get(e.tool) === 1 && !used.has(e.tool)
    const base = own ? e.tool : prefixedName(e.server, e.tool)
    let name = base
    for (let i = 2; used.has(name); i++) name = fit(`${base}_${i}`)
    used.add(name)
    return name
  })
}

/** The MCP tools of one model request: their definitions, and a model's tool name back to its server and tool. */
export class McpCatalog {
  private readonly byOffered = new Map<string, McpEntry>()
  private readonly byTool = new Map<string, string>()

  constructor(
    readonly defs: ApiTool[],
    entries: readonly McpEntry[],
  ) {
    for (const e of entries) {
      this.byOffered.set(e.offered, e)
      this.byTool.set(`${e.server}\n${e.tool}`, e.offered)
    }
  }

  /** The MCP tool the model called by `name`, if it is one. */
  route(name: string): McpEntry | undefined {
    return this.byOffered.get(name)
  }

  /** What a past MCP tool use is called in this request: as offered now, or `<server>__<tool>` when it is not offered. */
  nameOf(server: string, tool: string): string {
    return this.byTool.get(`${server}\n${tool}`) ?? prefixedName(server, tool)
  }

  /** The conversation with each MCP tool use named as this request offers its tool (history.ts keeps the server's names). */
  rename(messages: MessageParam[], uses: ReadonlyMap<string, { server: string; name: string }>): MessageParam[] {
    if (!uses.size) return messages
    return messages.map((m) => {
      if (m.role !== 'assistant' || !Array.isArray(m.content) || !m.content.some((b) => b.type === 'tool_use' && uses.has(b.id))) return m
      const content = m.content.map((b) => {
        const u = b.type === 'tool_use' ? uses.get(b.id) : undefined
        return u && b.type === 'tool_use' ? { ...b, name: this.nameOf(u.server, u.name) } : b
      })
      return { ...m, content }
    })
  }
}

export const NO_MCP = new McpCatalog([], [])

/** Whether tool `name` of a toolset is enabled, and its policy (`configs` over `default_config`; the stored toolset has both). */
function configured(ts: McpToolset, name: string): Policy | undefined {
  const cfg = ts.configs.find((c) => c.name === name)
  const enabled = cfg?.enabled ?? ts.default_config.enabled
  return enabled ? (cfg?.permission_policy ?? ts.default_config.permission_policy) : undefined
}

const schemaOf = (t: McpTool): ApiTool['input_schema'] =>
  (t.inputSchema && t.inputSchema.type === 'object' ? t.inputSchema : { type: 'object', properties: {} }) as ApiTool['input_schema']

/**
 * A thread's MCP tools, turn by turn: at each model request, every `mcp_toolset` of the agent's snapshot is listed through
 * the session's connections (`McpPool`, cached per connection). A server that cannot be used is reported once a turn
 * (`session.error` naming it: `mcp_connection_failed_error`, or `mcp_authentication_failed_error` for a 401 or 403) and
 * its tools are left out of that turn's requests; the next turn tries it again.
 */
export class McpTurnTools {
  private failed = new Set<string>()

  constructor(
    private readonly pool: McpPool,
    private readonly events: Emitter,
  ) {}

  /** A new turn: servers that failed are tried again. */
  reset(): void {
    this.failed.clear()
  }

  async catalog(agent: SessionAgent, taken: ReadonlySet<string>, signal: AbortSignal): Promise<McpCatalog> {
    const toolsets = agent.tools.filter((t): t is McpToolset => t.type === 'mcp_toolset')
    if (!toolsets.length) return NO_MCP
    const listed = await Promise.all(
      toolsets.map(async (ts) => {
        const server = agent.mcp_servers.find((s) => s.name === ts.mcp_server_name)
        if (!server || this.failed.has(server.name)) return []
        try {
          const tools = await this.pool.get(server).tools(signal)
          return tools.flatMap((tool) => {
            const policy = configured(ts, tool.name)
            return policy ? [{ server: server.name, tool, policy }] : []
          })
        } catch (err) {
          if (signal.aborted) return []
          this.failed.add(server.name)
          const f = err instanceof McpFailure ? err : new McpFailure('unreachable', server.name, `MCP server ${server.name}: ${String(err)}`)
          this.events.emit('session.error', {
            error: {
              type: f.kind === 'auth' ? 'mcp_authentication_failed_error' : 'mcp_connection_failed_error',
              mcp_server_name: server.name,
              message: `${f.message}; this turn goes on without its tools, and the next one tries again.`,
              retry_status: { type: 'retrying' },
            },
          })
          return []
        }
      }),
    )
    const all = listed.flat()
    const names = offeredNames(
      all.map((x) => ({ server: x.server, tool: x.tool.name })),
      taken,
    )
    const entries = all.map((x, i) => ({ offered: names[i]!, server: x.server, tool: x.tool.name, policy: x.policy }))
    const defs = all.map((x, i) => ({
      name: names[i]!,
      ...(x.tool.description ? { description: x.tool.description } : {}),
      input_schema: schemaOf(x.tool),
    }))
    return new McpCatalog(defs, entries)
  }
}
