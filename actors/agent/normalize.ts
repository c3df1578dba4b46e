import { fail } from '../../protocol/errors/fail.js'
import type {
  AgentToolConfig,
  AgentToolConfigParamsT,
  ExecutionIdentity,
  ExecutionIdentityParamsT,
  McpServer,
  McpServerParamsT,
  ModelConfig,
  ModelInputT,
  Policy,
  Tool,
  ToolDefaultConfig,
  ToolParamsT,
  UrlSourceFilter,
  UrlSources,
  UrlSourcesParamsT,
} from '../../protocol/schemas/agent.js'

/**
 * Turns validated request shapes into the stored (= response) form and checks the rules that span fields.
 * Everything here is pure; the schemas in protocol/schemas/agent.ts have already checked each shape.
 * Stored objects never carry keys whose value is undefined, so records compare equal after a msgpack
 * round trip (material-change detection compares JSON).
 */

/** "" and null both clear system and description (SPEC: null clears; WIRE: "" or null clears). */
export const textOrNull = (s: string | null | undefined): string | null => (s === undefined || s === null || s === '' ? null : s)

/**
 * The response form of a model: `{id, effort?, inference_geo?, speed?}` with keys only when set.
 * On update (`prev` given) the model is replaced whole, so an omitted inference_geo or speed clears it (SPEC
 * rule 6); an omitted effort keeps the stored effort, as the official client documents ("on update, omitting
 * it leaves the stored value unchanged"); `effort: null` clears it. An empty inference_geo means unset.
 */
export function normalizeModel(input: ModelInputT, prev?: ModelConfig): ModelConfig {
  const p = typeof input === 'string' ? { id: input } : input
  const out: ModelConfig = { id: p.id }
  const effort = 'effort' in p ? p.effort : prev?.effort
  if (effort != null) out.effort = { type: typeof effort === 'string' ? effort : effort.type }
  if ('inference_geo' in p && p.inference_geo) out.inference_geo = p.inference_geo
  if ('speed' in p && p.speed) out.speed = p.speed
  return out
}

export const geoOf = (m: ModelConfig): string | undefined => m.inference_geo

export function normalizeExecutionIdentity(p: ExecutionIdentityParamsT | null | undefined): ExecutionIdentity {
  if (!p || p.type === 'service_account') return { type: 'service_account' }
  return { type: 'aws_role', role_arn: p.role_arn }
}

/**
 * Toolset defaults as the vendor documents them: enabled, and `always_allow` for the agent toolset but
 * `always_ask` for MCP toolsets (new tools on a server should not run unapproved).
 */
const AGENT_TOOLSET_DEFAULT: ToolDefaultConfig = { enabled: true, permission_policy: { type: 'always_allow' } }
const MCP_TOOLSET_DEFAULT: ToolDefaultConfig = { enabled: true, permission_policy: { type: 'always_ask' } }

/** A toolset's default config, or one tool's config, as stored: what it says, and `dflt` where it says nothing. */
function configured(c: { enabled?: boolean | null; permission_policy?: Policy | null } | null | undefined, dflt: ToolDefaultConfig): ToolDefaultConfig {
  return {
    enabled: c?.enabled ?? dflt.enabled,
    permission_policy: c?.permission_policy ? { type: c.permission_policy.type } : dflt.permission_policy,
  }
}

const allNone = (v: unknown) => v === 'none' || (typeof v === 'object' && v !== null && (v as { type?: unknown }).type === 'none')

function urlFilter(v: UrlSourcesParamsT['client_tool_results']): UrlSourceFilter | null {
  if (v === undefined || v === null) return null
  if (typeof v === 'string') return { type: v }
  if (!('tools' in v)) return { type: v.type }
  return { type: v.type, tools: v.tools.map((t) => ({ type: 'tool_reference' as const, name: t.name })) }
}

function urlSources(p: UrlSourcesParamsT, where: string): UrlSources {
  if (allNone(p.user_input) && allNone(p.client_tool_results) && allNone(p.server_tool_results)) {
    throw fail('invalid_request', `${where}: user_input, client_tool_results and server_tool_results cannot all be "none" (nothing could be fetched)`)
  }
  const user = p.user_input
  return {
    user_input: user === undefined || user === null ? null : { type: typeof user === 'string' ? user : user.type },
    client_tool_results: urlFilter(p.client_tool_results),
    server_tool_results: urlFilter(p.server_tool_results),
  }
}

function toolConfig(c: AgentToolConfigParamsT, dflt: ToolDefaultConfig, where: string): AgentToolConfig {
  const out: AgentToolConfig = { type: c.name, name: c.name, ...configured(c, dflt) }
  if (c.name === 'web_fetch' || c.name === 'web_search') {
    if (c.allowed_domains && c.blocked_domains) {
      throw fail('invalid_request', `${where}: allowed_domains and blocked_domains are mutually exclusive (give one of them)`)
    }
    if (c.allowed_domains) out.allowed_domains = [...c.allowed_domains]
    if (c.blocked_domains) out.blocked_domains = [...c.blocked_domains]
  }
  if (c.name === 'web_fetch') {
    if (typeof c.max_content_tokens === 'number') out.max_content_tokens = c.max_content_tokens
    out.url_sources = c.url_sources ? urlSources(c.url_sources, `${where}.url_sources`) : null
  }
  if (c.name === 'web_search' && c.user_location) {
    const l = c.user_location
    out.user_location = { type: 'approximate' }
    for (const k of ['city', 'region', 'country', 'timezone'] as const) if (l[k] != null) out.user_location[k] = l[k]
  }
  return out
}

function noDuplicateNames(names: string[], where: (i: number) => string, what: string): void {
  const seen = new Map<string, number>()
  names.forEach((n, i) => {
    const j = seen.get(n)
    if (j !== undefined) throw fail('invalid_request', `${where(i)}: ${what} ${JSON.stringify(n)} appears twice (also at index ${j})`)
    seen.set(n, i)
  })
}

/** Tools in their response form, each completed with the defaults; rules within one tool are checked here. */
export function normalizeTools(params: ToolParamsT[]): Tool[] {
  return params.map((t, i): Tool => {
    const where = `tools[${i}]`
    if (t.type === 'custom') {
      return { type: 'custom', name: t.name, description: t.description, input_schema: t.input_schema as { type: 'object' } }
    }
    const dflt = configured(t.default_config, t.type === 'agent_toolset_20260401' ? AGENT_TOOLSET_DEFAULT : MCP_TOOLSET_DEFAULT)
    noDuplicateNames(
      (t.configs ?? []).map((c) => c.name),
      (k) => `${where}.configs[${k}].name`,
      'tool',
    )
    if (t.type === 'agent_toolset_20260401') {
      return {
        type: 'agent_toolset_20260401',
        default_config: dflt,
        configs: (t.configs ?? []).map((c, k) => toolConfig(c, dflt, `${where}.configs[${k}]`)),
      }
    }
    return {
      type: 'mcp_toolset',
      mcp_server_name: t.mcp_server_name,
      default_config: dflt,
      configs: (t.configs ?? []).map((c) => ({ name: c.name, ...configured(c, dflt) })),
    }
  })
}

export function normalizeServers(params: McpServerParamsT[]): McpServer[] {
  noDuplicateNames(
    params.map((s) => s.name),
    (i) => `mcp_servers[${i}].name`,
    'MCP server name',
  )
  return params.map((s) => ({ type: 'url', name: s.name, url: s.url }))
}

/**
 * Rules across the whole tool list and the MCP servers, checked on the state about to be stored (so an
 * update that replaces only one of the two lists is checked against the other as stored).
 */
export function checkToolGraph(tools: Tool[], servers: McpServer[]): void {
  let toolset: number | undefined
  const customs = new Map<string, number>()
  const toolsetFor = new Map<string, number>()
  const serverNames = new Set(servers.map((s) => s.name))
  tools.forEach((t, i) => {
    if (t.type === 'agent_toolset_20260401') {
      if (toolset !== undefined)
        throw fail('invalid_request', `tools[${i}]: at most one agent_toolset_20260401 entry is allowed (another is tools[${toolset}])`)
      toolset = i
    } else if (t.type === 'custom') {
      const j = customs.get(t.name)
      if (j !== undefined) throw fail('invalid_request', `tools[${i}].name: custom tool name ${JSON.stringify(t.name)} is already used by tools[${j}]`)
      customs.set(t.name, i)
    } else {
      if (!serverNames.has(t.mcp_server_name)) {
        throw fail('invalid_request', `tools[${i}].mcp_server_name: no MCP server named ${t.mcp_server_name} in mcp_servers`)
      }
      const j = toolsetFor.get(t.mcp_server_name)
      if (j !== undefined)
        throw fail('invalid_request', `tools[${i}].mcp_server_name: MCP server ${t.mcp_server_name} already has an mcp_toolset (tools[${j}])`)
      toolsetFor.set(t.mcp_server_name, i)
    }
  })
  servers.forEach((s, i) => {
    if (!toolsetFor.has(s.name)) {
      throw fail('invalid_request', `mcp_servers[${i}]: MCP server ${s.name} is not referenced by any mcp_toolset in tools (every server needs one)`)
    }
  })
  // web_fetch url_sources name other tools: client results must come from custom tools here, server results
  // from web_search or web_fetch.
  if (toolset === undefined) return
  const ts = tools[toolset] as Extract<Tool, { type: 'agent_toolset_20260401' }>
  ts.configs.forEach((c, k) => {
    const src = c.url_sources
    if (!src) return
    const where = `tools[${toolset}].configs[${k}].url_sources`
    const check = (key: 'client_tool_results' | 'server_tool_results', ok: (n: string) => boolean, rule: string) => {
      const f = src[key]
      if (!f || !('tools' in f)) return
      f.tools.forEach((r, m) => {
        if (!ok(r.name)) throw fail('invalid_request', `${where}.${key}.tools[${m}].name: ${JSON.stringify(r.name)} ${rule}`)
      })
    }
    check('client_tool_results', (n) => customs.has(n), 'is not a custom tool in tools')
    check('server_tool_results', (n) => n === 'web_search' || n === 'web_fetch', 'must be web_search or web_fetch')
  })
}

/**
 * SPEC "Agent validation rules": an agent with skills must enable `read` (skills are read from files) and
 * must not define a custom tool named `Skill` (the runtime's dispatcher). Only reachable once skills resolve.
 */
export function checkSkillRequirements(skills: readonly unknown[], tools: Tool[]): void {
  if (skills.length === 0) return
  const i = tools.findIndex((t) => t.type === 'custom' && t.name === 'Skill')
  if (i >= 0) throw fail('invalid_request', `tools[${i}].name: an agent with skills cannot define a custom tool named Skill (reserved for skill dispatch)`)
  const ts = tools.find((t) => t.type === 'agent_toolset_20260401')
  const read = ts?.configs.find((c) => c.name === 'read')
  const readEnabled = ts ? (read ? read.enabled : ts.default_config.enabled) : false
  if (!readEnabled)
    throw fail('invalid_request', 'skills: an agent with skills must enable the read tool of agent_toolset_20260401 (skills are read from files)')
}
