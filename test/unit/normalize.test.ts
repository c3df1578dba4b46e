import t, { type Test } from 'tap'
import { parse } from '../../protocol/validate.js'
import {
  McpServerList,
  ModelInput,
  SkillList,
  ToolList,
  type McpServerParamsT,
  type ModelInputT,
  type SkillParamsT,
  type SkillRef,
  type Tool,
  type ToolParamsT,
} from '../../protocol/schemas/agent.js'
import {
  checkSkillRequirements,
  checkToolGraph,
  normalizeExecutionIdentity,
  normalizeModel,
  normalizeServers,
  normalizeTools,
  textOrNull,
} from '../../actors/agent/normalize.js'
import { refusal } from './_refusal.js'

/**
 * Agent normalisation (actors/agent/normalize.ts) and the skills resolver, called directly. Every input goes
 * through the route's schema first, as the gateway would, so the rules are checked on shapes a client can send.
 */

const tools = (...x: unknown[]) => parse(ToolList, x) as ToolParamsT[]
const servers = (...x: unknown[]) => parse(McpServerList, x) as McpServerParamsT[]
const model = (x: unknown) => parse(ModelInput, x) as ModelInputT
const _skills = (...x: unknown[]) => parse(SkillList, x) as SkillParamsT[]
/** Tools in their stored form, as checkToolGraph and checkSkillRequirements receive them. */
const stored = (...x: unknown[]): Tool[] => normalizeTools(tools(...x))

const custom = (name: string) => ({ type: 'custom', name, description: 'd', input_schema: { type: 'object' } })
const server = (name: string) => ({ type: 'url', name, url: `https://mcp.example.com/${name}` })
const mcp = (name: string, extra: Record<string, unknown> = {}) => ({ type: 'mcp_toolset', mcp_server_name: name, ...extra })
const toolset = (extra: Record<string, unknown> = {}) => ({ type: 'agent_toolset_20260401', ...extra })

/** `fn` throws a 400 invalid_request_error with exactly `message` and no code. */
function refuses(t: Test, fn: () => unknown, message: string) {
  const e = refusal(fn)
  t.ok(e, `refused: ${message}`)
  if (!e) return
  t.equal(e.status, 400, `400: ${message}`)
  t.equal(e.type, 'invalid_request_error')
  t.equal(e.message, message)
  t.equal(e.code, undefined)
}

/** No key anywhere in `v` holds undefined (records must compare equal after a msgpack round trip). */
function noUndefined(v: unknown, path = '$'): string[] {
  if (Array.isArray(v)) return v.flatMap((x, i) => noUndefined(x, `${path}[${i}]`))
  if (v && typeof v === 'object') {
    return Object.entries(v).flatMap(([k, x]) => (x === undefined ? [`${path}.${k}`] : noUndefined(x, `${path}.${k}`)))
  }
  return []
}

t.test('textOrNull: "" and null clear, anything else is kept', async (t) => {
  t.equal(textOrNull(''), null)
  t.equal(textOrNull(null), null)
  t.equal(textOrNull(undefined), null)
  t.equal(textOrNull(' '), ' ')
  t.equal(textOrNull('x'), 'x')
})

t.test('normalizeModel: keys only when set; update replaces the model but keeps effort unless given', async (t) => {
  t.same(normalizeModel(model('m')), { id: 'm' })
  t.same(normalizeModel(model({ id: 'm' })), { id: 'm' })
  t.same(normalizeModel(model({ id: 'm', effort: 'high' })), { id: 'm', effort: { type: 'high' } })
  t.same(normalizeModel(model({ id: 'm', effort: { type: 'max' } })), { id: 'm', effort: { type: 'max' } })
  t.same(normalizeModel(model({ id: 'm', effort: null, inference_geo: null, speed: null })), { id: 'm' })
  t.same(normalizeModel(model({ id: 'm', inference_geo: '' })), { id: 'm' }, 'an empty inference_geo is unset')
  t.same(normalizeModel(model({ id: 'm', inference_geo: 'us', speed: 'fast' })), { id: 'm', inference_geo: 'us', speed: 'fast' })
  t.same(normalizeModel(model({ id: 'm', speed: 'standard' })), { id: 'm', speed: 'standard' })
  t.same(noUndefined(normalizeModel(model({ id: 'm', effort: null, inference_geo: '', speed: null }))), [])

  const prev = { id: 'old', effort: { type: 'low' as const }, inference_geo: 'eu', speed: 'fast' as const }
  t.same(normalizeModel(model('new'), prev), { id: 'new', effort: { type: 'low' } }, 'a string keeps effort, clears geo and speed')
  t.same(normalizeModel(model({ id: 'new' }), prev), { id: 'new', effort: { type: 'low' } })
  t.same(normalizeModel(model({ id: 'new', effort: null }), prev), { id: 'new' }, 'effort: null clears it')
  t.same(normalizeModel(model({ id: 'new', effort: 'xhigh' }), prev), { id: 'new', effort: { type: 'xhigh' } })
  t.same(normalizeModel(model({ id: 'new', inference_geo: 'us' }), { id: 'old' }), { id: 'new', inference_geo: 'us' })
  t.not(normalizeModel(model('new'), prev).effort, prev.effort, 'a copy, not the stored object')
})

t.test('normalizeExecutionIdentity: service_account unless an aws_role is given', async (t) => {
  t.same(normalizeExecutionIdentity(undefined), { type: 'service_account' })
  t.same(normalizeExecutionIdentity(null), { type: 'service_account' })
  t.same(normalizeExecutionIdentity({ type: 'service_account' }), { type: 'service_account' })
  t.same(normalizeExecutionIdentity({ type: 'aws_role', role_arn: 'arn:aws:iam::1:role/x' }), { type: 'aws_role', role_arn: 'arn:aws:iam::1:role/x' })
})

t.test('agent toolset: defaults filled in (enabled, always_allow), each config completed from default_config', async (t) => {
  t.same(normalizeTools(tools(toolset())), [
    { type: 'agent_toolset_20260401', default_config: { enabled: true, permission_policy: { type: 'always_allow' } }, configs: [] },
  ])
  t.same(normalizeTools(tools(toolset({ default_config: null, configs: [] })))[0], {
    type: 'agent_toolset_20260401',
    default_config: { enabled: true, permission_policy: { type: 'always_allow' } },
    configs: [],
  })
  t.same(
    normalizeTools(tools(toolset({ default_config: { enabled: null, permission_policy: null } })))[0],
    {
      type: 'agent_toolset_20260401',
      default_config: { enabled: true, permission_policy: { type: 'always_allow' } },
      configs: [],
    },
    'null means the default',
  )
  const out = normalizeTools(
    tools(
      toolset({
        default_config: { enabled: false, permission_policy: { type: 'auto' } },
        configs: [
          { name: 'bash' },
          { name: 'read', type: 'read', enabled: true },
          { name: 'edit', enabled: null, permission_policy: null },
          { name: 'write', permission_policy: { type: 'always_ask' } },
        ],
      }),
    ),
  )
  t.same(out, [
    {
      type: 'agent_toolset_20260401',
      default_config: { enabled: false, permission_policy: { type: 'auto' } },
      configs: [
        { type: 'bash', name: 'bash', enabled: false, permission_policy: { type: 'auto' } },
        { type: 'read', name: 'read', enabled: true, permission_policy: { type: 'auto' } },
        { type: 'edit', name: 'edit', enabled: false, permission_policy: { type: 'auto' } },
        { type: 'write', name: 'write', enabled: false, permission_policy: { type: 'always_ask' } },
      ],
    },
  ])
  t.same(noUndefined(out), [])
})

t.test('web_fetch and web_search configs', async (t) => {
  const input = tools(
    toolset({
      configs: [
        { name: 'web_fetch', allowed_domains: ['a.example'], max_content_tokens: null, url_sources: null },
        {
          name: 'web_search',
          blocked_domains: ['b.example'],
          user_location: { type: 'approximate', city: 'Oslo', region: null, country: 'NO', timezone: null },
        },
      ],
    }),
  )
  const out = normalizeTools(input)
  t.same(
    (out[0] as Extract<Tool, { type: 'agent_toolset_20260401' }>).configs,
    [
      { type: 'web_fetch', name: 'web_fetch', enabled: true, permission_policy: { type: 'always_allow' }, allowed_domains: ['a.example'], url_sources: null },
      {
        type: 'web_search',
        name: 'web_search',
        enabled: true,
        permission_policy: { type: 'always_allow' },
        blocked_domains: ['b.example'],
        user_location: { type: 'approximate', city: 'Oslo', country: 'NO' },
      },
    ],
    'null fields dropped, url_sources null when not given',
  )
  t.same(noUndefined(out), [])
  // The stored lists are copies: changing the request afterwards does not change them.
  const cfg = (input[0] as { configs: Array<{ allowed_domains?: string[] }> }).configs[0]!
  cfg.allowed_domains!.push('later.example')
  t.same((out[0] as Extract<Tool, { type: 'agent_toolset_20260401' }>).configs[0]!.allowed_domains, ['a.example'])

  const fetch = (url_sources: unknown) =>
    (
      normalizeTools(tools(toolset({ configs: [{ name: 'web_fetch', max_content_tokens: 500, url_sources }] })))[0] as Extract<
        Tool,
        { type: 'agent_toolset_20260401' }
      >
    ).configs[0]!
  t.same(fetch({}).url_sources, { user_input: null, client_tool_results: null, server_tool_results: null })
  t.equal(fetch({}).max_content_tokens, 500)
  t.same(
    fetch({ user_input: 'all', client_tool_results: { type: 'none' }, server_tool_results: 'none' }).url_sources,
    {
      user_input: { type: 'all' },
      client_tool_results: { type: 'none' },
      server_tool_results: { type: 'none' },
    },
    'string and object forms both become objects',
  )
  t.same(fetch({ client_tool_results: { type: 'except', tools: [{ type: 'tool_reference', name: 'x' }] } }).url_sources, {
    user_input: null,
    client_tool_results: { type: 'except', tools: [{ type: 'tool_reference', name: 'x' }] },
    server_tool_results: null,
  })
  // All three "none", in any form: nothing could be fetched.
  const NONE = 'tools[0].configs[0].url_sources: user_input, client_tool_results and server_tool_results cannot all be "none" (nothing could be fetched)'
  refuses(t, () => fetch({ user_input: 'none', client_tool_results: 'none', server_tool_results: 'none' }), NONE)
  refuses(t, () => fetch({ user_input: { type: 'none' }, client_tool_results: 'none', server_tool_results: { type: 'none' } }), NONE)
  // One of them left out (or null) is not "none".
  t.ok(fetch({ user_input: 'none', client_tool_results: 'none' }).url_sources)
  t.ok(fetch({ user_input: 'none', client_tool_results: 'none', server_tool_results: null }).url_sources)

  for (const name of ['web_fetch', 'web_search']) {
    refuses(
      t,
      () => normalizeTools(tools(toolset({ configs: [{ name: 'bash' }, { name, allowed_domains: ['a.x'], blocked_domains: ['b.x'] }] }))),
      'tools[0].configs[1]: allowed_domains and blocked_domains are mutually exclusive (give one of them)',
    )
  }
})

t.test('MCP toolsets: defaults are always_ask (enabled), configs completed from default_config', async (t) => {
  t.same(normalizeTools(tools(mcp('gh'))), [
    { type: 'mcp_toolset', mcp_server_name: 'gh', default_config: { enabled: true, permission_policy: { type: 'always_ask' } }, configs: [] },
  ])
  t.same(
    normalizeTools(
      tools(
        mcp('gh', {
          default_config: { enabled: false },
          configs: [{ name: 'search' }, { name: 'rm', enabled: true, permission_policy: { type: 'always_allow' } }],
        }),
      ),
    ),
    [
      {
        type: 'mcp_toolset',
        mcp_server_name: 'gh',
        default_config: { enabled: false, permission_policy: { type: 'always_ask' } },
        configs: [
          { name: 'search', enabled: false, permission_policy: { type: 'always_ask' } },
          { name: 'rm', enabled: true, permission_policy: { type: 'always_allow' } },
        ],
      },
    ],
  )
})

t.test('custom tools keep their input_schema as given', async (t) => {
  const schema = { type: 'object', properties: { q: { type: 'string' } }, required: ['q'], additionalProperties: false }
  t.same(normalizeTools(tools({ type: 'custom', name: 'lookup', description: '', input_schema: schema })), [
    { type: 'custom', name: 'lookup', description: '', input_schema: schema },
  ])
})

t.test('duplicate names are refused with the field, the name and the first index', async (t) => {
  refuses(
    t,
    () => normalizeTools(tools(toolset({ configs: [{ name: 'bash' }, { name: 'read' }, { name: 'bash' }] }))),
    'tools[0].configs[2].name: tool "bash" appears twice (also at index 0)',
  )
  refuses(
    t,
    () => normalizeTools(tools(custom('c'), mcp('gh', { configs: [{ name: 'a' }, { name: 'a' }] }))),
    'tools[1].configs[1].name: tool "a" appears twice (also at index 0)',
  )
  refuses(
    t,
    () => normalizeServers(servers(server('a'), server('gh'), server('gh'))),
    'mcp_servers[2].name: MCP server name "gh" appears twice (also at index 1)',
  )
  refuses(t, () => checkToolGraph(stored(custom('a'), custom('b'), custom('a')), []), 'tools[2].name: custom tool name "a" is already used by tools[0]')
  // Names are compared exactly.
  t.doesNotThrow(() => checkToolGraph(stored(custom('a'), custom('A')), []))
  t.doesNotThrow(() => normalizeServers(servers(server('gh'), server('GH'))))
  // The same tool name in two different places is fine: a custom tool named like a built-in, two MCP servers' tools.
  t.doesNotThrow(() => checkToolGraph(stored(toolset({ configs: [{ name: 'bash' }] }), custom('bash')), []))
  const two = normalizeServers(servers(server('x'), server('y')))
  t.doesNotThrow(() => checkToolGraph(stored(mcp('x', { configs: [{ name: 't' }] }), mcp('y', { configs: [{ name: 't' }] })), two))
})

t.test('normalizeServers: the stored form', async (t) => {
  t.same(normalizeServers(servers(server('gh'))), [{ type: 'url', name: 'gh', url: 'https://mcp.example.com/gh' }])
  t.same(normalizeServers([]), [])
})

t.test('the tool graph: one agent toolset, every mcp_toolset names a server, every server has exactly one toolset', async (t) => {
  const gh = normalizeServers(servers(server('gh')))
  t.doesNotThrow(() => checkToolGraph([], []))
  t.doesNotThrow(() => checkToolGraph(stored(toolset(), custom('c'), mcp('gh')), gh))
  refuses(
    t,
    () => checkToolGraph(stored(toolset(), custom('c'), toolset()), []),
    'tools[2]: at most one agent_toolset_20260401 entry is allowed (another is tools[0])',
  )
  refuses(t, () => checkToolGraph(stored(mcp('foo')), []), 'tools[0].mcp_server_name: no MCP server named foo in mcp_servers')
  refuses(
    t,
    () => checkToolGraph(stored(custom('c'), mcp('gh'), mcp('gh')), gh),
    'tools[2].mcp_server_name: MCP server gh already has an mcp_toolset (tools[1])',
  )
  refuses(
    t,
    () => checkToolGraph(stored(custom('c')), gh),
    'mcp_servers[0]: MCP server gh is not referenced by any mcp_toolset in tools (every server needs one)',
  )
  const three = normalizeServers(servers(server('a'), server('b'), server('c')))
  refuses(
    t,
    () => checkToolGraph(stored(mcp('a'), mcp('c')), three),
    'mcp_servers[1]: MCP server b is not referenced by any mcp_toolset in tools (every server needs one)',
  )
  // Rules across tools come before rules across servers: the first broken tool is named.
  refuses(t, () => checkToolGraph(stored(mcp('zzz')), three), 'tools[0].mcp_server_name: no MCP server named zzz in mcp_servers')
})

t.test('the tool graph: web_fetch url_sources name real tools', async (t) => {
  const fetchWith = (sources: Record<string, unknown>) => toolset({ configs: [{ name: 'bash' }, { name: 'web_fetch', url_sources: sources }] })
  const only = (...names: string[]) => ({ type: 'only', tools: names.map((name) => ({ type: 'tool_reference', name })) })
  t.doesNotThrow(
    () => checkToolGraph(stored(fetchWith({ client_tool_results: only('fetcher') }), custom('fetcher')), []),
    'a custom tool listed after the toolset counts',
  )
  t.doesNotThrow(() => checkToolGraph(stored(custom('fetcher'), fetchWith({ client_tool_results: { ...only('fetcher'), type: 'except' } })), []))
  t.doesNotThrow(() => checkToolGraph(stored(fetchWith({ server_tool_results: only('web_search', 'web_fetch') })), []))
  t.doesNotThrow(() => checkToolGraph(stored(fetchWith({ client_tool_results: 'all', server_tool_results: { type: 'none' } })), []))
  refuses(
    t,
    () => checkToolGraph(stored(custom('fetcher'), fetchWith({ client_tool_results: only('fetcher', 'ghost') })), []),
    'tools[1].configs[1].url_sources.client_tool_results.tools[1].name: "ghost" is not a custom tool in tools',
  )
  refuses(
    t,
    () => checkToolGraph(stored(fetchWith({ client_tool_results: only('bash') })), []),
    'tools[0].configs[1].url_sources.client_tool_results.tools[0].name: "bash" is not a custom tool in tools',
  )
  refuses(
    t,
    () => checkToolGraph(stored(fetchWith({ server_tool_results: { type: 'except', tools: [{ type: 'tool_reference', name: 'bash' }] } })), []),
    'tools[0].configs[1].url_sources.server_tool_results.tools[0].name: "bash" must be web_search or web_fetch',
  )
})

t.test('skills need the read tool and leave the name Skill to the dispatcher', async (t) => {
  const one: SkillRef[] = [{ type: 'custom', skill_id: 'skill_01X', version: '1' }]
  // Without skills nothing is required.
  t.doesNotThrow(() => checkSkillRequirements([], stored(custom('Skill'))))
  t.doesNotThrow(() => checkSkillRequirements([], []))

  t.doesNotThrow(() => checkSkillRequirements(one, stored(toolset())), 'read enabled by default')
  t.doesNotThrow(
    () => checkSkillRequirements(one, stored(toolset({ default_config: { enabled: false }, configs: [{ name: 'read', enabled: true }] }))),
    'read enabled on its own',
  )
  t.doesNotThrow(
    () => checkSkillRequirements(one, stored(toolset({ configs: [{ name: 'read', permission_policy: { type: 'always_ask' } }] }))),
    'read that asks is still enabled',
  )
  t.doesNotThrow(() => checkSkillRequirements(one, stored(custom('skill'), custom('Skills'), toolset())), 'only the exact name Skill is reserved')

  const NO_READ = 'skills: an agent with skills must enable the read tool of agent_toolset_20260401 (skills are read from files)'
  refuses(t, () => checkSkillRequirements(one, []), NO_READ)
  refuses(t, () => checkSkillRequirements(one, stored(custom('read'))), NO_READ)
  refuses(t, () => checkSkillRequirements(one, stored(toolset({ default_config: { enabled: false } }))), NO_READ)
  refuses(t, () => checkSkillRequirements(one, stored(toolset({ configs: [{ name: 'read', enabled: false }] }))), NO_READ)
  refuses(t, () => checkSkillRequirements(one, stored(toolset({ default_config: { enabled: false }, configs: [{ name: 'bash', enabled: true }] }))), NO_READ)
  refuses(
    t,
    () => checkSkillRequirements(one, stored(toolset(), custom('a'), custom('Skill'))),
    'tools[2].name: an agent with skills cannot define a custom tool named Skill (reserved for skill dispatch)',
  )
  // The reserved name is checked first.
  refuses(
    t,
    () => checkSkillRequirements(one, stored(custom('Skill'))),
    'tools[0].name: an agent with skills cannot define a custom tool named Skill (reserved for skill dispatch)',
  )
})
