import type { Rng } from './rng.js'
import type { Victims } from './types.js'

/** A JSON value, as examples are written (the mutator walks it). */
export type Json = null | boolean | number | string | Json[] | { [k: string]: Json }

const text = (t: string) => ({ type: 'text', text: t })

const customTool = {
  type: 'custom',
  name: 'lookup',
  description: 'looks up',
  input_schema: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
}
const toolset = {
  type: 'agent_toolset_20260401',
  configs: [{ name: 'bash', enabled: true, permission_policy: { type: 'always_allow' } }],
  default_config: { enabled: true, permission_policy: { type: 'always_ask' } },
}

/**
 * A valid body per operation, touching most fields of its schema, so that mutating one field at a time
 * reaches each field's own validation (and what lies past it) instead of stopping at the first missing key.
 * Events have several shapes: `rng` picks one, so every event type and its id fields get their turn.
 */
export function exampleBody(operationId: string, v: Victims, rng: Rng): Json | undefined {
  const agent = rng.pick(v.agents)
  const env = rng.pick(v.environments)
  switch (operationId) {
    case 'admin.apiKeys.create':
      return rng.pick<Json>([
        { name: 'fuzz key', scope: rng.pick(['full', 'read_only', 'admin']), limits: { requests_per_second: 0 } },
        { name: 'fuzz key', workspace_id: 'wrkspc_fuzz', expires_in_seconds: 3600 },
      ])
    case 'admin.apiKeys.update':
      return rng.pick<Json>([{ name: 'renamed key' }, { limits: { burst: 5, upload_bytes_per_minute: 0 } }, { expires_in_seconds: null }])
    case 'webhooks.create':
      return { url: `https://h${rng.int(1000)}.example.com/hook`, event_types: ['session.status_idled', 'deployment_run.failed'] }
    case 'webhooks.update':
      return rng.pick<Json>([{ status: 'disabled' }, { status: 'enabled', url: 'https://moved.example.com/hook' }, { event_types: ['session.deleted'] }])
    case 'vaults.create':
      return { display_name: 'fuzz vault', metadata: { team: 'fuzz' } }
    case 'vaults.update':
      return { display_name: 'renamed vault', metadata: { team: null, k: 'v' } }
    case 'memoryStores.create':
      return { name: 'fuzz store', description: 'made by the fuzzer', metadata: { team: 'fuzz' } }
    case 'memoryStores.update':
      return rng.pick<Json>([{ name: 'renamed store', description: '', metadata: { team: null, k: 'v' } }, { description: null }])
    case 'dreams.create': {
      const store = rng.pick(v.memory_stores)
      return {
        inputs: [
          { type: 'memory_store', memory_store_id: store },
          { type: 'sessions', session_ids: [rng.pick(v.sessions)] },
        ],
        model: rng.chance(0.5) ? 'claude-sonnet-4-5' : { id: 'claude-sonnet-4-5', speed: 'standard' },
        instructions: 'made by the fuzzer',
        output_behavior: rng.pick<Json>([{ type: 'create_new' }, { type: 'update_existing', memory_store_id: store }]),
      }
    }
    case 'memoryStores.memories.create':
      return { path: `/fuzz/${rng.int(1000)}/notes.md`, content: 'made by the fuzzer' }
    case 'memoryStores.memories.update':
      return rng.pick<Json>([
        { content: 'changed by the fuzzer' },
        { path: `/fuzz/moved/${rng.int(1000)}.md` },
        { content: 'x', precondition: { type: 'content_sha256', content_sha256: '0'.repeat(64) } },
      ])
    case 'vaults.credentials.create':
      return {
        display_name: 'fuzz credential',
        metadata: { k: 'v' },
        auth: rng.pick<Json>([
          { type: 'static_bearer', mcp_server_url: `https://m${rng.int(1000)}.example.com/mcp`, token: 'fuzz-token' },
          {
            type: 'mcp_oauth',
            mcp_server_url: `https://o${rng.int(1000)}.example.com/mcp`,
            access_token: 'fuzz-access',
            expires_at: '2100-01-01T00:00:00Z',
            refresh: {
              client_id: 'c',
              refresh_token: 'fuzz-refresh',
              token_endpoint: 'https://auth.example.com/token',
              token_endpoint_auth: { type: 'client_secret_basic', client_secret: 'fuzz-secret' },
              resource: null,
              scope: 'read',
            },
          },
          {
            type: 'environment_variable',
            secret_name: `FUZZ_${rng.int(1000)}`,
            secret_value: 'fuzz-value',
            networking: { type: 'limited', allowed_hosts: ['api.example.com', '*.example.org'] },
            injection_location: { body: false, header: true },
          },
        ]),
      }
    case 'vaults.credentials.update':
      return { display_name: 'renamed credential', metadata: { k: null }, auth: { type: 'static_bearer', token: 'fuzz-token-2' } }
    case 'agents.create':
      return {
        name: 'fuzz agent',
        model: rng.chance(0.5) ? 'claude-sonnet-4-5' : { id: 'claude-sonnet-4-5', effort: 'low', speed: 'standard' },
        description: 'made by the fuzzer',
        system: 'be brief',
        tools: [toolset, customTool],
        mcp_servers: [{ type: 'url', name: 'docs', url: 'https://example.com/mcp' }],
        skills: [{ type: 'anthropic', skill_id: 'xlsx', version: 'latest' }],
        multiagent: rng.pick<Json>([
          null,
          {
            type: 'multiagent_20261001',
            advisor: { type: 'enabled', model: 'claude-opus-4-5' },
            subagents: { type: 'enabled', inline_agents: { type: 'disabled' }, predefined_agents: [agent, { type: 'self' }] },
            workflows: { type: 'disabled' },
          },
        ]),
        metadata: { team: 'fuzz', k: 'v' },
        execution_identity: { type: 'service_account' },
      }
    case 'agents.update':
      return {
        version: 1,
        name: 'renamed',
        description: null,
        system: 'be briefer',
        tools: [customTool],
        metadata: { team: 'fuzz2', k: null },
      }
    case 'environments.work.update':
      return { metadata: { k: 'v', gone: null } }
    case 'environments.work.stop':
      return { force: rng.chance(0.5) }
    case 'environments.create':
      return {
        name: 'fuzz env',
        description: 'made by the fuzzer',
        metadata: { team: 'fuzz' },
        config: { type: 'cloud', networking: { type: 'unrestricted' }, packages: { type: 'packages', pip: [], npm: [] } },
      }
    case 'environments.update':
      return { name: 'renamed', description: null, metadata: { team: null, k: 'v' }, config: { type: 'cloud', networking: { type: 'unrestricted' } } }
    case 'sessions.create':
      return {
        agent: rng.chance(0.5) ? agent : { type: 'agent', id: agent, version: 1 },
        environment_id: env,
        title: 'fuzz session',
        metadata: { team: 'fuzz' },
        vault_ids: [],
        resources: [
          { type: 'file', file_id: rng.pick(v.files), mount_path: '/mnt/session/uploads/fuzz/in.txt' },
          // A memory store resource's every field (the fuzzer's server may refuse mounting it: a 422, after the shape).
          ...(v.memory_stores.length
            ? [{ type: 'memory_store', memory_store_id: rng.pick(v.memory_stores), access: rng.pick(['read_write', 'read_only']), instructions: 'fuzz notes' }]
            : []),
        ],
        budget: { type: 'limit', max_list_cost: { amount: '100', currency: 'USD' } },
      }
    case 'sessions.resources.add':
      return { type: 'file', file_id: rng.pick(v.files), mount_path: rng.chance(0.5) ? null : '/mnt/session/uploads/fuzz/added.txt' }
    case 'sessions.resources.update':
      return { authorization_token: 'ghp_fuzz' }
    case 'sessions.update':
      return {
        title: 'renamed',
        metadata: { team: null, k: 'v' },
        agent: { tools: [customTool], mcp_servers: [] },
        budget: null,
      }
    case 'sessions.events.send':
      return { events: [exampleEvent(rng)] }
    case 'deployments.create':
      return {
        name: 'fuzz deployment',
        agent: rng.chance(0.5) ? agent : { type: 'agent', id: agent, version: 1 },
        environment_id: env,
        description: 'made by the fuzzer',
        initial_events: [
          { type: 'user.message', content: [text('hello')] },
          { type: 'system.message', content: [text('be brief')] },
        ],
        resources: [],
        vault_ids: [],
        schedule: { type: 'cron', expression: '*/15 9-17 * * MON-FRI', timezone: 'America/New_York' },
        metadata: { team: 'fuzz' },
        budget: { type: 'limit', max_list_cost: { amount: '100', currency: 'USD' } },
      }
    case 'deployments.update':
      return {
        name: 'renamed',
        description: '',
        agent,
        environment_id: env,
        initial_events: [{ type: 'user.message', content: [text('again')] }],
        resources: null,
        vault_ids: [],
        schedule: rng.chance(0.5) ? null : { type: 'cron', expression: '0 0 * * 0', timezone: 'UTC' },
        metadata: { team: null, k: 'v' },
        budget: null,
      }
    default:
      return undefined
  }
}

/** One client event of a random type, each carrying its id fields (tool_use_id, session_thread_id, file_id…). */
function exampleEvent(rng: Rng): Json {
  const thread = rng.pick([null, 'sthr_01JX0000000000000000000000'])
  return rng.pick<Json>([
    { type: 'user.message', content: [text('hello')] },
    { type: 'user.message', content: [{ type: 'image', source: { type: 'file', file_id: 'file_01JX0000000000000000000000' } }] },
    { type: 'user.message', content: [{ type: 'document', source: { type: 'text', data: 'doc', media_type: 'text/plain' }, title: 't' }] },
    { type: 'user.interrupt', session_thread_id: thread },
    { type: 'user.tool_confirmation', tool_use_id: 'toolu_01', result: 'deny', deny_message: 'no', session_thread_id: thread },
    { type: 'user.custom_tool_result', custom_tool_use_id: 'toolu_02', content: [text('42')], is_error: false, session_thread_id: thread },
    { type: 'user.tool_result', tool_use_id: 'toolu_03', content: [text('ok')], is_error: null },
    { type: 'user.define_outcome', description: 'done', rubric: { type: 'file', file_id: 'file_01JX0000000000000000000001' }, max_iterations: 3 },
  ])
}

/**
 * Body fields that hold ids of other things (by key name, wherever they sit in the example): the hostile-id
 * class replaces their values. `agent` is a session's agent reference (a string, or an object with `id`).
 */
export const ID_FIELDS = new Set([
  'environment_id',
  'agent',
  'id',
  'vault_ids',
  'tool_use_id',
  'custom_tool_use_id',
  'session_thread_id',
  'file_id',
  'skill_id',
  'mcp_server_name',
  'memory_store_id',
  'session_ids',
])

/** The query parameters each list route knows, with a valid value, to mutate one at a time. */
export function exampleQuery(operationId: string, v: Victims): Array<[string, string]> {
  switch (operationId) {
    case 'agents.list':
      return [
        ['limit', '10'],
        ['include_archived', 'true'],
        ['created_at[gte]', '2020-01-01T00:00:00Z'],
      ]
    case 'agents.retrieve':
      return [['version', '1']]
    case 'agents.versions.list':
      return [['limit', '5']]
    case 'webhooks.list':
      return [['limit', '10']]
    case 'vaults.list':
    case 'vaults.credentials.list':
      return [
        ['limit', '10'],
        ['include_archived', 'true'],
      ]
    case 'environments.work.poll':
      return [
        ['block_ms', '5'],
        ['reclaim_older_than_ms', '0'],
      ]
    case 'environments.work.heartbeat':
      return [
        ['desired_ttl_seconds', '30'],
        ['expected_last_heartbeat', 'NO_HEARTBEAT'],
      ]
    case 'environments.work.list':
      return [['limit', '10']]
    case 'environments.list':
      return [
        ['limit', '10'],
        ['include_archived', 'false'],
      ]
    case 'sessions.list':
      return [
        ['limit', '10'],
        ['order', 'asc'],
        ['agent_id', v.agents[0]!],
        ['agent_version', '1'],
        ['statuses[]', 'idle'],
        ['created_at[lt]', '2100-01-01T00:00:00Z'],
      ]
    case 'sessions.events.list':
      return [
        ['limit', '10'],
        ['order', 'desc'],
        ['types[]', 'user.message'],
      ]
    case 'sessions.events.stream':
      return [['event_deltas[]', 'agent.message']]
    case 'deployments.list':
      return [
        ['limit', '10'],
        ['agent_id', v.agents[0]!],
        ['status', 'active'],
        ['created_at[gte]', '2020-01-01T00:00:00Z'],
        ['created_at[lte]', '2100-01-01T00:00:00Z'],
      ]
    case 'deployment_runs.list':
      return [
        ['limit', '10'],
        ['deployment_id', v.deployments[0]!],
        ['has_error', 'false'],
        ['trigger_type', 'manual'],
        ['created_at[gt]', '2020-01-01T00:00:00Z'],
        ['created_at[lte]', '2100-01-01T00:00:00Z'],
      ]
    case 'sessions.resources.list':
      return [
        ['limit', '2'],
        ['page', ''],
      ]
    case 'files.list':
      return [
        ['limit', '10'],
        ['scope_id', v.sessions[0]!],
      ]
    case 'memoryStores.list':
      return [
        ['limit', '10'],
        ['include_archived', 'true'],
        ['created_at[gte]', '2020-01-01T00:00:00Z'],
      ]
    case 'dreams.list':
      return [
        ['limit', '10'],
        ['include_archived', 'true'],
        ['statuses[]', 'pending'],
        ['statuses[]', 'failed'],
        ['created_at[gt]', '2020-01-01T00:00:00Z'],
      ]
    case 'memoryStores.memories.list':
      return [
        ['limit', '10'],
        ['path_prefix', '/victim/'],
        ['depth', '1'],
        ['view', 'full'],
      ]
    case 'memoryStores.memories.retrieve':
      return [['view', 'basic']]
    case 'memoryStores.memories.delete':
      return [['expected_content_sha256', '0'.repeat(64)]]
    case 'memoryStores.memoryVersions.list':
      return [
        ['limit', '10'],
        ['memory_id', v.memories[0]!],
        ['operation', 'created'],
        ['view', 'full'],
        ['created_at[lte]', '2100-01-01T00:00:00Z'],
      ]
    default:
      return []
  }
}
