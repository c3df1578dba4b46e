import { APIError } from '@anthropic-ai/sdk'
import type { WebFetchTool20250910, WebSearchTool20250305 } from '@anthropic-ai/sdk/resources/messages'
import type { AgentToolConfig, AgentToolset, Policy, UrlSourceFilter, UrlSources } from '../../../protocol/schemas/agent.js'
import type { SessionAgent } from '../../../protocol/session.js'
import type { ServerToolResultBlock, ToolResultContent } from '../../../protocol/session-events.js'

/**
 * The web tools of `agent_toolset_20260401` (docs/ARCHITECTURE.md, "Web tools"): `web_search` and `web_fetch` are the
 * Messages API's own server tools, run by the provider inside the model's response, outside the sandbox and its
 * networking policy (SPEC environments rule 9). The versions offered are the first of each, which every model with
 * the tools takes; web fetch needs no beta header since it became generally available (the official client has it
 * among the Messages API's own tools, `WebFetchTool20250910`, and no `web-fetch-…` beta).
 */

export type WebToolName = 'web_search' | 'web_fetch'
export type WebToolDefinition = WebSearchTool20250305 | WebFetchTool20250910

export const WEB_TOOL_TYPES = {
  web_search: 'web_search_20250305',
  web_fetch: 'web_fetch_20250910',
} as const satisfies Record<WebToolName, WebToolDefinition['type']>

const NAMES = Object.keys(WEB_TOOL_TYPES) as WebToolName[]

/** The web tools a request offers, with the permission policy each use is reported under. */
export interface WebTools {
  defs: WebToolDefinition[]
  policy(name: string): Policy | undefined
}

export const NO_WEB: WebTools = { defs: [], policy: () => undefined }

/**
 * The agent's enabled web tools as server tool definitions, their settings carried as the API names them. Left out:
 * a tool under `always_ask` (the provider runs it inside the response, so no confirmation could come first; run
 * unasked, a web fetch could carry data out), a name another offered tool has (`taken`: a custom tool of that
 * name is the agent's own), and the tools the endpoint refused this turn (`refused`).
 */
export function webTools(agent: SessionAgent, taken: ReadonlySet<string>, refused: ReadonlySet<string>): WebTools {
  const ts = agent.tools.find((t): t is AgentToolset => t.type === 'agent_toolset_20260401')
  if (!ts) return NO_WEB
  const policies = new Map<string, Policy>()
  const configs = new Map<WebToolName, AgentToolConfig | undefined>()
  for (const name of NAMES) {
    const cfg = ts.configs.find((c) => c.name === name)
    const policy = cfg?.permission_policy ?? ts.default_config.permission_policy
    if (!(cfg?.enabled ?? ts.default_config.enabled) || policy.type === 'always_ask' || taken.has(name) || refused.has(name)) continue
    policies.set(name, policy)
    configs.set(name, cfg)
  }
  const defs: WebToolDefinition[] = []
  if (configs.has('web_search')) {
    const c = configs.get('web_search')
    defs.push({ type: WEB_TOOL_TYPES.web_search, name: 'web_search', ...domains(c), ...(c?.user_location ? { user_location: { ...c.user_location } } : {}) })
  }
  if (configs.has('web_fetch')) {
    const c = configs.get('web_fetch')
    const sources = c?.url_sources ? urlSources(c.url_sources, new Set(configs.keys())) : undefined
    // Nothing left to fetch from (the tools its sources named are not offered): not offered either.
    if (sources !== null) {
      defs.push({
        type: WEB_TOOL_TYPES.web_fetch,
        name: 'web_fetch',
        ...domains(c),
        ...(c?.max_content_tokens ? { max_content_tokens: c.max_content_tokens } : {}),
        ...(sources ? { url_sources: sources } : {}),
      })
    } else policies.delete('web_fetch')
  }
  return { defs, policy: (name) => policies.get(name) }
}

const domains = (c: AgentToolConfig | undefined) => ({
  ...(c?.allowed_domains ? { allowed_domains: [...c.allowed_domains] } : {}),
  ...(c?.blocked_domains ? { blocked_domains: [...c.blocked_domains] } : {}),
})

type ApiUrlSources = NonNullable<WebFetchTool20250910['url_sources']>

/**
 * `url_sources` as the API takes it: unset keys left out (the API's default, every source). The API refuses a
 * `tool_reference` to a tool the request does not declare, so a server tool named there and not offered (`offered`)
 * is dropped: `only` those tools becomes `none`, `except` them loses them. Undefined: no restriction; null: the three
 * sources all say none.
 */
function urlSources(s: UrlSources, offered: ReadonlySet<string>): ApiUrlSources | undefined | null {
  const out: ApiUrlSources = {}
  if (s.user_input) out.user_input = { type: s.user_input.type }
  if (s.client_tool_results) out.client_tool_results = filter(s.client_tool_results, () => true)
  if (s.server_tool_results) out.server_tool_results = filter(s.server_tool_results, (n) => offered.has(n))
  const none = (f: { type: string } | undefined) => f?.type === 'none'
  if (none(out.user_input) && none(out.client_tool_results) && none(out.server_tool_results)) return null
  return Object.keys(out).length ? out : undefined
}

function filter(f: UrlSourceFilter, keep: (name: string) => boolean): NonNullable<ApiUrlSources['server_tool_results']> {
  if (!('tools' in f)) return { type: f.type }
  const tools = f.tools.filter((r) => keep(r.name)).map((r) => ({ type: 'tool_reference' as const, name: r.name }))
  if (tools.length) return { type: f.type, tools }
  return { type: f.type === 'only' ? 'none' : 'all' }
}

/**
 * The web tool a 400 of the model endpoint refuses (a model, or a proxy in front of one, without server tools), when
 * its message names one of those offered, by type or by name: the first named, so that a message listing the tags it
 * does take is read as refusing the one it complains of first.
 */
export function refusedWebTool(err: unknown, offered: readonly WebToolDefinition[]): WebToolDefinition | undefined {
  if (!offered.length || !(err instanceof APIError) || err.status !== 400) return undefined
  const body = err.error as { error?: { message?: unknown } } | undefined
  const message = typeof body?.error?.message === 'string' ? body.error.message : err.message
  let first: { at: number; def: WebToolDefinition } | undefined
  for (const def of offered) {
    for (const word of [def.type, def.name]) {
      const at = message.search(new RegExp(`(?<![A-Za-z0-9_])${word}(?![A-Za-z0-9_])`))
      if (at >= 0 && (!first || at < first.at)) first = { at, def }
    }
  }
  return first?.def
}

/**
 * How much of a fetched page the readable form holds (the MCP results' bound): the event also stores the provider's
 * block whole, so a long page is not stored twice in full.
 */
const READABLE_MAX_CHARS = 200_000

/**
 * A server tool result block's readable form, as `agent.tool_result` shows it: each search result a `search_result`
 * block (its page content is encrypted, for the model only: the block holds its age when the provider gave one), a
 * fetched page its `document` (cut at READABLE_MAX_CHARS), an error a text naming its code.
 */
export function readableResult(block: ServerToolResultBlock): { content: ToolResultContent[]; is_error: boolean } {
  const c = block.content as Record<string, unknown> | Array<Record<string, unknown>> | null
  if (Array.isArray(c)) {
    return {
      is_error: false,
      content: c.map((r) => ({
        type: 'search_result' as const,
        source: String(r.url ?? ''),
        title: String(r.title ?? ''),
        content: typeof r.page_age === 'string' && r.page_age ? [{ type: 'text' as const, text: `Page age: ${r.page_age}` }] : [],
        citations: { enabled: false },
      })),
    }
  }
  if (c && typeof c.error_code === 'string') {
    const tool = block.type === 'web_search_tool_result' ? 'web_search' : 'web_fetch'
    return { is_error: true, content: [{ type: 'text', text: `${tool} failed: ${c.error_code}` }] }
  }
  const doc = c?.content as { source?: { type?: string; data?: unknown; media_type?: unknown }; title?: unknown } | undefined
  const url = String(c?.url ?? '')
  const src = doc?.source
  const title = typeof doc?.title === 'string' ? doc.title : url
  if (src?.type === 'text' && typeof src.data === 'string') {
    const data =
      src.data.length <= READABLE_MAX_CHARS
        ? src.data
        : `${src.data.slice(0, READABLE_MAX_CHARS)}\n[cut here: the page has ${src.data.length} characters; the model read it whole]`
    return { is_error: false, content: [{ type: 'document', source: { type: 'text', data, media_type: 'text/plain' }, title, context: url }] }
  }
  if (src?.type === 'base64' && src.media_type === 'application/pdf' && typeof src.data === 'string' && src.data.length <= READABLE_MAX_CHARS) {
    return { is_error: false, content: [{ type: 'document', source: { type: 'base64', data: src.data, media_type: 'application/pdf' }, title, context: url }] }
  }
  const what = typeof src?.media_type === 'string' ? ` (${src.media_type})` : ''
  return { is_error: false, content: [{ type: 'text', text: `Fetched ${url}${what}` }] }
}
