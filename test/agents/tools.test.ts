import t from 'tap'
import { stack } from '../helpers/stack.js'
import { raw } from '../helpers/troupe.js'

const s = await stack()
const agents = s.client.beta.agents
const create = (body: Record<string, unknown>) => raw(s.url, 'POST', '/v1/agents', { name: 'tools', model: 'x', ...body })
const custom = (name: string, extra: Record<string, unknown> = {}) => ({ type: 'custom', name, description: 'd', input_schema: { type: 'object' }, ...extra })
const server = (name: string, url = `https://mcp.example.com/${name}`) => ({ type: 'url' as const, name, url })

async function rejects(t: any, body: Record<string, unknown>, status: number, rule: RegExp, code?: string) {
  const r = await create(body)
  t.equal(r.status, status, rule.source)
  t.match(r.json?.error?.message, rule, rule.source)
  if (code) t.equal(r.json.error.details?.error_code, code)
}

t.test('agent toolset: defaults and response form', async (t) => {
  const a = await agents.create({ name: 't', model: 'x', tools: [{ type: 'agent_toolset_20260401' }] })
  t.same(a.tools, [{ type: 'agent_toolset_20260401', default_config: { enabled: true, permission_policy: { type: 'always_allow' } }, configs: [] }])
  const b = await agents.create({
    name: 't',
    model: 'x',
    tools: [
      {
        type: 'agent_toolset_20260401',
        default_config: { enabled: false, permission_policy: { type: 'always_ask' } },
        configs: [
          { name: 'bash', enabled: true },
          { name: 'read', type: 'read', permission_policy: { type: 'auto' } },
          {
            name: 'web_fetch',
            allowed_domains: ['example.com'],
            max_content_tokens: 1000,
            url_sources: { user_input: 'none', server_tool_results: { type: 'only', tools: [{ type: 'tool_reference', name: 'web_search' }] } },
          },
          { name: 'web_search', blocked_domains: ['bad.example'], user_location: { type: 'approximate', city: 'Paris', country: null } },
        ],
      },
    ],
  })
  t.same(b.tools, [
    {
      type: 'agent_toolset_20260401',
      default_config: { enabled: false, permission_policy: { type: 'always_ask' } },
      configs: [
        { type: 'bash', name: 'bash', enabled: true, permission_policy: { type: 'always_ask' } },
        { type: 'read', name: 'read', enabled: false, permission_policy: { type: 'auto' } },
        {
          type: 'web_fetch',
          name: 'web_fetch',
          enabled: false,
          permission_policy: { type: 'always_ask' },
          allowed_domains: ['example.com'],
          max_content_tokens: 1000,
          url_sources: {
            user_input: { type: 'none' },
            client_tool_results: null,
            server_tool_results: { type: 'only', tools: [{ type: 'tool_reference', name: 'web_search' }] },
          },
        },
        {
          type: 'web_search',
          name: 'web_search',
          enabled: false,
          permission_policy: { type: 'always_ask' },
          blocked_domains: ['bad.example'],
          user_location: { type: 'approximate', city: 'Paris' },
        },
      ],
    },
  ])
  const c = await agents.create({ name: 't', model: 'x', tools: [{ type: 'agent_toolset_20260401', default_config: null, configs: [{ name: 'web_fetch' }] }] })
  t.same(c.tools[0], {
    type: 'agent_toolset_20260401',
    default_config: { enabled: true, permission_policy: { type: 'always_allow' } },
    configs: [{ type: 'web_fetch', name: 'web_fetch', enabled: true, permission_policy: { type: 'always_allow' }, url_sources: null }],
  })
})

t.test('agent toolset: rejections', async (t) => {
  const ts = (configs: unknown[], extra: Record<string, unknown> = {}) => ({ tools: [{ type: 'agent_toolset_20260401', configs, ...extra }] })
  await rejects(t, ts([{ name: 'nope' }]), 400, /tools\[0\]\.configs\[0\]\.name must be/)
  await rejects(t, ts([{ name: 'bash', type: 'edit' }]), 400, /tools\[0\]\.configs\[0\]/)
  await rejects(t, ts([{ name: 'bash' }, { name: 'bash' }]), 400, /tools\[0\]\.configs\[1\]\.name: tool "bash" appears twice/)
  await rejects(t, ts([{ name: 'bash', allowed_domains: ['a.com'] }]), 400, /tools\[0\]\.configs\[0\]\.allowed_domains is not a known field/)
  await rejects(
    t,
    ts([{ name: 'web_fetch', allowed_domains: ['a.com'], blocked_domains: ['b.com'] }]),
    400,
    /tools\[0\]\.configs\[0\]: allowed_domains and blocked_domains are mutually exclusive/,
  )
  await rejects(t, ts([{ name: 'web_search', allowed_domains: ['a.com'], blocked_domains: ['b.com'] }]), 400, /mutually exclusive/)
  await rejects(t, ts([{ name: 'web_fetch', allowed_domains: [] }]), 400, /tools\[0\]\.configs\[0\]\.allowed_domains must be non-empty/)
  await rejects(
    t,
    ts([{ name: 'web_fetch', blocked_domains: Array.from({ length: 65 }, (_, i) => `d${i}.com`) }]),
    400,
    /blocked_domains must be at most length 64/,
  )
  await rejects(t, ts([{ name: 'web_fetch', allowed_domains: [''] }]), 400, /allowed_domains\[0\] must be non-empty/)
  await rejects(
    t,
    ts([{ name: 'web_fetch', url_sources: { user_input: 'none', client_tool_results: 'none', server_tool_results: { type: 'none' } } }]),
    400,
    /url_sources: .*cannot all be "none"/,
  )
  await rejects(
    t,
    ts([{ name: 'web_fetch', url_sources: { client_tool_results: { type: 'only', tools: [{ type: 'tool_reference', name: 'ghost' }] } } }]),
    400,
    /client_tool_results\.tools\[0\]\.name: "ghost" is not a custom tool/,
  )
  await rejects(
    t,
    ts([{ name: 'web_fetch', url_sources: { server_tool_results: { type: 'except', tools: [{ type: 'tool_reference', name: 'bash' }] } } }]),
    400,
    /server_tool_results\.tools\[0\]\.name: "bash" must be web_search or web_fetch/,
  )
  await rejects(t, ts([{ name: 'bash', permission_policy: { type: 'never' } }]), 400, /permission_policy\.type must be/)
  await rejects(t, ts([], { default_config: { enabled: 'yes' } }), 400, /tools\[0\]\.default_config\.enabled must be/)
  await rejects(t, ts([], { extra: 1 }), 400, /tools\[0\]\.extra is not a known field/)
  await rejects(t, { tools: [{ type: 'agent_toolset_20260401' }, { type: 'agent_toolset_20260401' }] }, 400, /tools\[1\]: at most one agent_toolset_20260401/)
  await rejects(t, { tools: [{ type: 'computer_20250101' }] }, 400, /tools\[0\]\.type must be/)
  // A client-results filter naming a real custom tool is fine.
  const ok = await create({
    tools: [
      custom('fetcher'),
      {
        type: 'agent_toolset_20260401',
        configs: [{ name: 'web_fetch', url_sources: { client_tool_results: { type: 'only', tools: [{ type: 'tool_reference', name: 'fetcher' }] } } }],
      },
    ],
  })
  t.equal(ok.status, 200)
})

t.test('custom tools', async (t) => {
  const schema = { type: 'object', properties: { q: { type: 'string' } }, required: ['q'], additionalProperties: false, $schema: 'x' }
  const a = await agents.create({ name: 't', model: 'x', tools: [{ type: 'custom', name: 'lookup-1_A', description: 'Look up', input_schema: schema as any }] })
  t.same(a.tools, [{ type: 'custom', name: 'lookup-1_A', description: 'Look up', input_schema: schema }], 'input_schema kept as given, extra keywords included')
  await rejects(t, { tools: [custom('bad name')] }, 400, /tools\[0\]\.name must be 1 to 128 characters/)
  await rejects(t, { tools: [custom('x'.repeat(129))] }, 400, /tools\[0\]\.name must be 1 to 128/)
  await rejects(t, { tools: [custom('')] }, 400, /tools\[0\]\.name/)
  await rejects(t, { tools: [custom('a'), custom('b'), custom('a')] }, 400, /tools\[2\]\.name: custom tool name "a" is already used by tools\[0\]/)
  await rejects(t, { tools: [{ type: 'custom', name: 'a', input_schema: { type: 'object' } }] }, 400, /tools\[0\]\.description/)
  await rejects(t, { tools: [custom('a', { input_schema: { type: 'array' } })] }, 400, /tools\[0\]\.input_schema\.type must be "object"/)
  await rejects(t, { tools: [custom('a', { input_schema: { type: 'object', required: 'q' } })] }, 400, /input_schema\.required/)
  await rejects(t, { tools: Array.from({ length: 257 }, (_, i) => custom(`t${i}`)) }, 400, /tools must be at most length 256/)
  const max = await create({ tools: Array.from({ length: 256 }, (_, i) => custom(`t${i}`)) })
  t.equal(max.status, 200, '256 tools are fine')
})

t.test('MCP servers and toolsets', async (t) => {
  const a = await agents.create({
    name: 't',
    model: 'x',
    mcp_servers: [server('gh'), { type: 'url', name: 'local', url: 'http://127.0.0.1:9000/mcp' }],
    tools: [
      { type: 'mcp_toolset', mcp_server_name: 'gh' },
      {
        type: 'mcp_toolset',
        mcp_server_name: 'local',
        default_config: { permission_policy: { type: 'always_allow' } },
        configs: [{ name: 'search' }, { name: 'rm', enabled: false, permission_policy: { type: 'always_ask' } }],
      },
    ],
  })
  t.same(a.mcp_servers, [server('gh'), { type: 'url', name: 'local', url: 'http://127.0.0.1:9000/mcp' }])
  t.same(
    a.tools,
    [
      { type: 'mcp_toolset', mcp_server_name: 'gh', default_config: { enabled: true, permission_policy: { type: 'always_ask' } }, configs: [] },
      {
        type: 'mcp_toolset',
        mcp_server_name: 'local',
        default_config: { enabled: true, permission_policy: { type: 'always_allow' } },
        configs: [
          { name: 'search', enabled: true, permission_policy: { type: 'always_allow' } },
          { name: 'rm', enabled: false, permission_policy: { type: 'always_ask' } },
        ],
      },
    ],
    'MCP toolsets default to always_ask, as the vendor documents',
  )
  await rejects(t, { tools: [{ type: 'mcp_toolset', mcp_server_name: 'foo' }] }, 400, /tools\[0\]\.mcp_server_name: no MCP server named foo in mcp_servers/)
  await rejects(t, { mcp_servers: [server('gh')], tools: [custom('c')] }, 400, /mcp_servers\[0\]: MCP server gh is not referenced by any mcp_toolset/)
  await rejects(
    t,
    { mcp_servers: [server('gh'), server('gh')], tools: [{ type: 'mcp_toolset', mcp_server_name: 'gh' }] },
    400,
    /mcp_servers\[1\]\.name: MCP server name "gh" appears twice/,
  )
  await rejects(
    t,
    {
      mcp_servers: [server('gh')],
      tools: [
        { type: 'mcp_toolset', mcp_server_name: 'gh' },
        { type: 'mcp_toolset', mcp_server_name: 'gh' },
      ],
    },
    400,
    /tools\[1\]\.mcp_server_name: MCP server gh already has an mcp_toolset \(tools\[0\]\)/,
  )
  await rejects(
    t,
    { mcp_servers: [server('gh')], tools: [{ type: 'mcp_toolset', mcp_server_name: 'gh', configs: [{ name: 'a' }, { name: 'a' }] }] },
    400,
    /tools\[0\]\.configs\[1\]\.name: tool "a" appears twice/,
  )
  await rejects(
    t,
    { mcp_servers: [server('gh', 'ftp://x.example')], tools: [{ type: 'mcp_toolset', mcp_server_name: 'gh' }] },
    400,
    /mcp_servers\[0\]\.url must be an http or https URL/,
  )
  await rejects(
    t,
    { mcp_servers: [server('gh', 'not a url')], tools: [{ type: 'mcp_toolset', mcp_server_name: 'gh' }] },
    400,
    /mcp_servers\[0\]\.url must be an http or https URL/,
  )
  await rejects(t, { mcp_servers: [{ type: 'stdio', name: 'gh', url: 'https://x' }] }, 400, /mcp_servers\[0\]\.type must be "url"/)
  await rejects(t, { mcp_servers: [server('')] }, 400, /mcp_servers\[0\]\.name must be non-empty/)
  await rejects(t, { mcp_servers: [server('n'.repeat(256))] }, 400, /mcp_servers\[0\]\.name must be at most length 255/)
  await rejects(t, { mcp_servers: [{ ...server('gh'), headers: {} }] }, 400, /mcp_servers\[0\]\.headers is not a known field/)
  const many = Array.from({ length: 21 }, (_, i) => server(`s${i}`))
  await rejects(
    t,
    { mcp_servers: many, tools: many.map((m) => ({ type: 'mcp_toolset', mcp_server_name: m.name })) },
    400,
    /mcp_servers must be at most length 20/,
  )
  const twenty = many.slice(0, 20)
  t.equal((await create({ mcp_servers: twenty, tools: twenty.map((m) => ({ type: 'mcp_toolset', mcp_server_name: m.name })) })).status, 200)
})

t.test('MCP references are checked against the stored half on update', async (t) => {
  const a = await agents.create({ name: 't', model: 'x', mcp_servers: [server('gh')], tools: [{ type: 'mcp_toolset', mcp_server_name: 'gh' }] })
  const r1 = await raw(s.url, 'POST', `/v1/agents/${a.id}`, { mcp_servers: [] })
  t.equal(r1.status, 400)
  t.match(r1.json.error.message, /tools\[0\]\.mcp_server_name: no MCP server named gh in mcp_servers/)
  const r2 = await raw(s.url, 'POST', `/v1/agents/${a.id}`, { tools: [] })
  t.equal(r2.status, 400)
  t.match(r2.json.error.message, /mcp_servers\[0\]: MCP server gh is not referenced/)
  const both = await agents.update(a.id, { tools: [], mcp_servers: [] })
  t.equal(both.version, 2)
  t.same(both.tools, [])
})

t.test('skills', async (t) => {
  await rejects(
    t,
    { skills: [{ type: 'anthropic', skill_id: 'pdf' }] },
    422,
    /skills\[0\]: vendor-managed \(anthropic\) skills are not supported/,
    'vendor_skills_unsupported',
  )
  // Custom references resolve through the skill kind (test/skills/pins.test.ts): one that names no skill is a 404.
  await rejects(t, { skills: [{ type: 'custom', skill_id: 'skill_01X', version: 'latest' }] }, 404, /^skills\[0\]: Skill skill_01X not found$/)
  await rejects(t, { skills: [{ type: 'other', skill_id: 'x' }] }, 400, /skills\[0\]\.type must be/)
  await rejects(t, { skills: [{ type: 'custom' }] }, 400, /skills\[0\]\.skill_id/)
  await rejects(t, { skills: [{ type: 'custom', skill_id: 'xlsx' }] }, 400, /skills\[0\]\.skill_id must be an id like skill_01…/)
  await rejects(t, { skills: [{ type: 'anthropic', skill_id: 'a.b' }] }, 400, /skills\[0\]\.skill_id must be/)
  await rejects(t, { skills: [{ type: 'custom', skill_id: 'skill_s', extra: 1 }] }, 400, /skills\[0\]\.extra is not a known field/)
  const ok = await agents.create({ name: 't', model: 'x', skills: [] })
  t.same(ok.skills, [])
  const up = await raw(s.url, 'POST', `/v1/agents/${ok.id}`, { skills: [{ type: 'anthropic', skill_id: 'pdf' }] })
  t.equal(up.status, 422)
  t.equal(up.json.error.type, 'invalid_request_error')
  t.equal(up.json.error.details.error_code, 'vendor_skills_unsupported')
  // Skill pins survive updates of unrelated fields (here: the empty list stays as stored).
  const u = await agents.update(ok.id, { name: 'renamed' })
  t.same(u.skills, [])
})

t.test('an unknown multiagent type is a shape error (multiagent_20261001 itself: test/agents/multiagent.test.ts)', async (t) => {
  await rejects(t, { multiagent: { type: 'swarm' } }, 400, /multiagent\.type must be/)
})
