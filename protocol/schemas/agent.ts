import { type } from 'arktype'
import { HttpUrl, Metadata, MetadataPatch, boolParam, limitParam, notArray, pageParam, timestampParam } from './common.js'
import { AgentId, SkillId } from './ids.js'
import { listOf } from './list.js'
import { lazy } from './lazy.js'

/**
 * Agents on the wire (WIRE.md §4). The schemas here check shapes only, so every message names the field
 * and the rule in arktype's words; rules that span fields (MCP server references, duplicate names, roster
 * resolution, inference_geo agreement) are the agent actor's (actors/agent/normalize.ts, roster.ts).
 * Every object rejects unknown keys, except a custom tool's `input_schema`, which is the caller's JSON Schema.
 */

export const EFFORT_LEVELS = ['low', 'medium', 'high', 'xhigh', 'max'] as const
export const TOOL_NAMES = ['bash', 'edit', 'read', 'write', 'glob', 'grep', 'web_fetch', 'web_search'] as const

const EffortLevel = lazy(() => type("'low' | 'medium' | 'high' | 'xhigh' | 'max'"))

export const ModelParams = lazy(() =>
  type({
    '+': 'reject',
    id: 'string > 0',
    'effort?': type.or(EffortLevel, { '+': 'reject', type: EffortLevel }, 'null'),
    'inference_geo?': 'string | null',
    'speed?': "'standard' | 'fast' | null",
  }),
)
/** A model id string, or the object form. */
export const ModelInput = lazy(() => type('string > 0').or(ModelParams))

export const PermissionPolicy = lazy(() => type({ '+': 'reject', type: "'always_allow' | 'always_ask' | 'auto'" }))

const DefaultConfigParams = lazy(() =>
  type({
    '+': 'reject',
    'enabled?': 'boolean | null',
    'permission_policy?': PermissionPolicy.or('null'),
  }),
)

const DomainList = lazy(() => listOf(type('string > 0'), { min: 1, max: 64 }))

const ToolReference = lazy(() => type({ '+': 'reject', type: "'tool_reference'", name: 'string > 0' }))
const UrlSourceAllNone = lazy(() => type("'all' | 'none'").or({ '+': 'reject', type: "'all' | 'none'" }))
const UrlSourceFilter = lazy(() => UrlSourceAllNone.or({ '+': 'reject', type: "'only' | 'except'", tools: listOf(ToolReference, { max: 256 }) }))
export const UrlSourcesParams = lazy(() =>
  type({
    '+': 'reject',
    'user_input?': UrlSourceAllNone.or('null'),
    'client_tool_results?': UrlSourceFilter.or('null'),
    'server_tool_results?': UrlSourceFilter.or('null'),
  }),
)

export const UserLocation = lazy(() =>
  type({
    '+': 'reject',
    type: "'approximate'",
    'city?': 'string | null',
    'region?': 'string | null',
    'country?': 'string | null',
    'timezone?': 'string | null',
  }),
)

const configCommon = {
  '+': 'reject',
  'enabled?': 'boolean | null',
  'permission_policy?': PermissionPolicy.or('null'),
} as const

const WebFetchConfig = lazy(() =>
  type({
    ...configCommon,
    name: "'web_fetch'",
    'type?': "'web_fetch'",
    'allowed_domains?': DomainList,
    'blocked_domains?': DomainList,
    'max_content_tokens?': type('number.integer >= 1').or('null'),
    'url_sources?': UrlSourcesParams.or('null'),
  }),
)

const WebSearchConfig = lazy(() =>
  type({
    ...configCommon,
    name: "'web_search'",
    'type?': "'web_search'",
    'allowed_domains?': DomainList,
    'blocked_domains?': DomainList,
    'user_location?': UserLocation.or('null'),
  }),
)

/** One toolset config; `name` picks the branch and `type`, when given, must repeat it. */
export const AgentToolConfigParams = lazy(() =>
  type.or(
    { ...configCommon, name: "'bash'", 'type?': "'bash'" },
    { ...configCommon, name: "'edit'", 'type?': "'edit'" },
    { ...configCommon, name: "'read'", 'type?': "'read'" },
    { ...configCommon, name: "'write'", 'type?': "'write'" },
    { ...configCommon, name: "'glob'", 'type?': "'glob'" },
    { ...configCommon, name: "'grep'", 'type?': "'grep'" },
    WebFetchConfig,
    WebSearchConfig,
  ),
)

export const AgentToolsetParams = lazy(() =>
  type({
    '+': 'reject',
    type: "'agent_toolset_20260401'",
    'configs?': listOf(AgentToolConfigParams, { max: 256 }),
    'default_config?': DefaultConfigParams.or('null'),
  }),
)

export const McpToolsetParams = lazy(() =>
  type({
    '+': 'reject',
    type: "'mcp_toolset'",
    mcp_server_name: '0 < string <= 255',
    'configs?': type({
      '+': 'reject',
      name: 'string > 0',
      'enabled?': 'boolean | null',
      'permission_policy?': PermissionPolicy.or('null'),
    })
      .array()
      .atMostLength(256),
    'default_config?': DefaultConfigParams.or('null'),
  }),
)

const CUSTOM_TOOL_NAME = /^[A-Za-z0-9_-]{1,128}$/
export const CustomToolParams = lazy(() =>
  type({
    '+': 'reject',
    type: "'custom'",
    name: type('string').narrow((n, ctx) =>
      CUSTOM_TOOL_NAME.test(n) ? true : ctx.reject({ expected: '1 to 128 characters of A-Z, a-z, 0-9, _ or -', actual: JSON.stringify(n) }),
    ),
    description: 'string',
    // The caller's JSON Schema: extra keywords are allowed here and only here.
    input_schema: {
      type: "'object'",
      'properties?': type({ '[string]': 'unknown' }).narrow(notArray).or('null'),
      'required?': type('string[]').or('null'),
    },
  }),
)

export const ToolParams = lazy(() => type.or(AgentToolsetParams, McpToolsetParams, CustomToolParams))
export const ToolList = lazy(() => listOf(ToolParams, { max: 256 }))

export const McpServerParams = lazy(() => type({ '+': 'reject', type: "'url'", name: '0 < string <= 255', url: HttpUrl }))
export const McpServerList = lazy(() => listOf(McpServerParams, { max: 20 }))

const SkillVersion = lazy(() => type.or('string > 0', 'number.integer >= 1', 'null'))
/** A custom skill is named by its id; a vendor-managed one by its short name (`xlsx`). */
export const SkillParams = lazy(() =>
  type({ '+': 'reject', type: "'custom'", skill_id: SkillId, 'version?': SkillVersion }).or({
    '+': 'reject',
    type: "'anthropic'",
    skill_id: /^[a-z0-9][a-z0-9_-]{0,63}$/,
    'version?': SkillVersion,
  }),
)
/** SPEC: up to 500 skills. */
export const SkillList = lazy(() => listOf(SkillParams, { max: 500 }))

/** A reference to a saved agent, as rosters and predefined-agent lists take it. */
export const AgentRefParams = lazy(() =>
  type.or(AgentId, { '+': 'reject', type: "'agent'", id: AgentId, 'version?': 'number.integer >= 1' }, { '+': 'reject', type: "'self'" }),
)
export const RosterEntryParams = lazy(() => AgentRefParams.or({ '+': 'reject', type: "'advisor'", model: 'string > 0' }))

export const CoordinatorParams = lazy(() => type({ '+': 'reject', type: "'coordinator'", agents: listOf(RosterEntryParams, { max: 1000 }) }))

const Disabled = lazy(() => type({ '+': 'reject', type: "'disabled'" }))
/** `subagents` and `workflows` share one shape. The list's limit (20) is the actor's, which words it as the roster's. */
const AgentsLevelParams = lazy(() =>
  type({
    '+': 'reject',
    type: "'enabled'",
    'inline_agents?': type({ '+': 'reject', type: "'enabled' | 'disabled'" }).or('null'),
    'predefined_agents?': listOf(AgentRefParams, { max: 1000 }).or('null'),
  }).or(Disabled),
)
/** Null takes the key's default; what is stored is the agent actor's (actors/agent/multiagent.ts). */
export const Multiagent20261001Params = lazy(() =>
  type({
    '+': 'reject',
    type: "'multiagent_20261001'",
    'advisor?': type({ '+': 'reject', type: "'enabled'", model: 'string > 0' }).or(Disabled).or('null'),
    'subagents?': AgentsLevelParams.or('null'),
    'workflows?': AgentsLevelParams.or('null'),
  }),
)
export const MultiagentParams = lazy(() => CoordinatorParams.or(Multiagent20261001Params))

export const ExecutionIdentityParams = lazy(() =>
  type({ '+': 'reject', type: "'service_account'" }).or({
    '+': 'reject',
    type: "'aws_role'",
    role_arn: '0 < string <= 2048',
  }),
)

const Name = lazy(() => type('0 < string <= 256'))
const System = lazy(() => type('string <= 100000'))
const Description = lazy(() => type('string <= 2048'))

/** Create: explicit null is accepted where the client types allow it (not for lists or metadata). */
export const AgentCreate = lazy(() =>
  type({
    '+': 'reject',
    name: Name,
    model: ModelInput,
    'description?': Description.or('null'),
    'system?': System.or('null'),
    'tools?': ToolList,
    'mcp_servers?': McpServerList,
    'skills?': SkillList,
    'multiagent?': MultiagentParams.or('null'),
    'metadata?': Metadata,
    'execution_identity?': ExecutionIdentityParams.or('null'),
  }),
)

/** Update: omitted keeps; name, model, metadata and version cannot be null (SPEC "Agent update field rules"). */
export const AgentUpdate = lazy(() =>
  type({
    '+': 'reject',
    'version?': 'number.integer >= 1',
    'name?': Name,
    'model?': ModelInput,
    'description?': Description.or('null'),
    'system?': System.or('null'),
    'tools?': ToolList.or('null'),
    'mcp_servers?': McpServerList.or('null'),
    'skills?': SkillList.or('null'),
    'multiagent?': MultiagentParams.or('null'),
    'metadata?': MetadataPatch,
    'execution_identity?': ExecutionIdentityParams.or('null'),
  }).narrow(notArray),
)

export const AgentListQuery = lazy(() =>
  type({
    'created_at[gte]?': timestampParam,
    'created_at[lte]?': timestampParam,
    'include_archived?': boolParam,
    'limit?': limitParam(100),
    'page?': pageParam,
  }),
)

export const AgentGetQuery = lazy(() =>
  type({
    'version?': type('string.integer.parse').pipe(type('number >= 1')),
  }),
)

export const AgentVersionsQuery = lazy(() =>
  type({
    'limit?': limitParam(100),
    'page?': pageParam,
  }),
)

export type ModelInputT = typeof ModelInput.infer
export type ToolParamsT = typeof ToolParams.infer
export type AgentToolConfigParamsT = typeof AgentToolConfigParams.infer
export type McpServerParamsT = typeof McpServerParams.infer
export type SkillParamsT = typeof SkillParams.infer
export type RosterEntryParamsT = typeof RosterEntryParams.infer
export type AgentRefParamsT = typeof AgentRefParams.infer
export type CoordinatorParamsT = typeof CoordinatorParams.infer
export type AgentsLevelParamsT = typeof AgentsLevelParams.infer
export type Multiagent20261001ParamsT = typeof Multiagent20261001Params.infer
export type MultiagentParamsT = typeof MultiagentParams.infer
export type ExecutionIdentityParamsT = typeof ExecutionIdentityParams.infer
export type UrlSourcesParamsT = typeof UrlSourcesParams.infer
export type AgentCreateInput = typeof AgentCreate.infer
export type AgentUpdateInput = typeof AgentUpdate.infer
export type AgentListInput = typeof AgentListQuery.infer
export type AgentGetInput = typeof AgentGetQuery.infer
export type AgentVersionsInput = typeof AgentVersionsQuery.infer

// Resource shapes as returned (WIRE.md §4).

export type EffortLevel = (typeof EFFORT_LEVELS)[number]
export type ToolName = (typeof TOOL_NAMES)[number]

export interface ModelConfig {
  id: string
  effort?: { type: EffortLevel }
  inference_geo?: string
  speed?: 'standard' | 'fast'
}

export interface Policy {
  type: 'always_allow' | 'always_ask' | 'auto'
}

export interface ToolDefaultConfig {
  enabled: boolean
  permission_policy: Policy
}

export type UrlSourceFilter = { type: 'all' | 'none' } | { type: 'only' | 'except'; tools: Array<{ type: 'tool_reference'; name: string }> }
export interface UrlSources {
  user_input: { type: 'all' | 'none' } | null
  client_tool_results: UrlSourceFilter | null
  server_tool_results: UrlSourceFilter | null
}

export interface AgentToolConfig {
  type: ToolName
  name: ToolName
  enabled: boolean
  permission_policy: Policy
  allowed_domains?: string[]
  blocked_domains?: string[]
  max_content_tokens?: number
  url_sources?: UrlSources | null
  user_location?: typeof UserLocation.infer
}

export interface AgentToolset {
  type: 'agent_toolset_20260401'
  default_config: ToolDefaultConfig
  configs: AgentToolConfig[]
}

export interface McpToolset {
  type: 'mcp_toolset'
  mcp_server_name: string
  default_config: ToolDefaultConfig
  configs: Array<{ name: string; enabled: boolean; permission_policy: Policy }>
}

export interface CustomTool {
  type: 'custom'
  name: string
  description: string
  input_schema: { type: 'object'; [k: string]: unknown }
}

export type Tool = AgentToolset | McpToolset | CustomTool

export interface McpServer {
  type: 'url'
  name: string
  url: string
}

export interface SkillRef {
  type: 'custom' | 'anthropic'
  skill_id: string
  version: string
}

export interface AgentReference {
  type: 'agent'
  id: string
  version: number
}
export interface AdvisorEntry {
  type: 'advisor'
  model: string
}
export type RosterEntry = AgentReference | AdvisorEntry

export interface Coordinator {
  type: 'coordinator'
  agents: RosterEntry[]
}

export type Disabled = { type: 'disabled' }
export type AdvisorSetting = { type: 'enabled'; model: string } | Disabled
/** `subagents` or `workflows` as stored: `M` is what a predefined agent is (a reference; a session's full definition). */
export type AgentsLevel<M = AgentReference> = { type: 'enabled'; inline_agents: { type: 'enabled' | 'disabled' }; predefined_agents: M[] } | Disabled

/** WIRE §4: all three keys always present. */
export interface Multiagent20261001<M = AgentReference> {
  type: 'multiagent_20261001'
  advisor: AdvisorSetting
  subagents: AgentsLevel<M>
  workflows: AgentsLevel<M>
}

export type Multiagent = Coordinator | Multiagent20261001

export type ExecutionIdentity = { type: 'service_account' } | { type: 'aws_role'; role_arn: string }

export interface Agent {
  id: string
  type: 'agent'
  version: number
  name: string
  description: string | null
  system: string | null
  model: ModelConfig
  tools: Tool[]
  mcp_servers: McpServer[]
  skills: SkillRef[]
  multiagent: Multiagent | null
  execution_identity: ExecutionIdentity
  metadata: Record<string, string>
  created_at: string
  updated_at: string
  archived_at: string | null
}
