import { type } from 'arktype'
import { parseAmount } from '../cost.js'
import { SESSION_STATUSES } from '../events.js'
import { McpServerList, ModelInput, SkillList, ToolList } from './agent.js'
import { Metadata, MetadataPatch, boolParam, limitParam, notArray, pageParam, refused, timestampParam } from './common.js'
import { AgentId, DeploymentId, EnvironmentId, MemoryStoreId, VaultId } from './ids.js'
import { ResourceParams } from './resource.js'
import { UserDefineOutcomeParams, UserMessageParams, listParam, tagged } from './events.js'
import { listOf } from './list.js'
import { lazy } from './lazy.js'

/**
 * Sessions on the wire (WIRE.md §6, SPEC "Sessions"). Shapes only: whether the agent, environment, vaults
 * and resources exist and can be used, and the budget rules that depend on the session's history, are the
 * session actor's (it answers 404/409/422).
 */

// parseAmount is the reader of budgets elsewhere, so the two cannot disagree (it also refuses unsafe integers).
const Amount = lazy(() =>
  type('string').narrow(
    (s, ctx) =>
      parseAmount(s) !== undefined ||
      ctx.reject({ expected: 'a whole number of US cents as a decimal string without sign or leading zeros', actual: JSON.stringify(s) }),
  ),
)

export const Budget = lazy(() =>
  type({
    '+': 'reject',
    type: "'limit'",
    max_list_cost: { '+': 'reject', amount: Amount, currency: "'USD'" },
  }),
)

const Title = lazy(() => type('string <= 512').or('null'))
const Version = lazy(() => type('number.integer >= 1'))

export const AgentRefParams = lazy(() =>
  type.or(
    AgentId,
    { '+': 'reject', type: "'agent'", id: AgentId, 'version?': Version },
    {
      '+': 'reject',
      type: "'agent_with_overrides'",
      id: AgentId,
      'version?': Version,
      'model?': ModelInput,
      'system?': type('string <= 100000').or('null'),
      'tools?': ToolList.or('null'),
      'mcp_servers?': McpServerList.or('null'),
      'skills?': SkillList.or('null'),
    },
  ),
)

// system.message is for deployments' initial events (DECISIONS "Sessions and events"), never a session's.
const InitialEvent = lazy(() =>
  tagged(
    ['user.message', 'user.define_outcome'],
    UserMessageParams.or(UserDefineOutcomeParams),
    'user.message or user.define_outcome, the only event types allowed in initial_events',
  ),
)

export const SessionCreate = lazy(() =>
  type({
    '+': 'reject',
    agent: AgentRefParams,
    environment_id: EnvironmentId,
    'title?': Title,
    'metadata?': Metadata,
    'initial_events?': listOf(InitialEvent, { max: 50 }),
    'resources?': listOf(ResourceParams, { max: 100 }),
    'vault_ids?': listOf(VaultId, { max: 50 }),
    'budget?': Budget.or('null'),
  }),
)

/** A key that is known but may not be sent: present at all, it is a 400 with this problem. */
const agentFixed = lazy(() => refused('cannot be changed on a session (only agent.tools and agent.mcp_servers can)'))

export const SessionUpdate = lazy(() =>
  type({
    '+': 'reject',
    'title?': Title,
    'metadata?': MetadataPatch.or('null'),
    'agent?': {
      '+': 'reject',
      'tools?': ToolList.or('null'),
      'mcp_servers?': McpServerList.or('null'),
      'model?': agentFixed,
      'system?': agentFixed,
      'skills?': agentFixed,
    },
    'vault_ids?': refused('cannot be changed after a session is created'),
    'budget?': Budget.or('null'),
  }).narrow(notArray),
)

export const SessionListQuery = lazy(() =>
  type({
    'limit?': limitParam(1000),
    'order?': "'asc' | 'desc'",
    'page?': pageParam,
    'agent_id?': AgentId,
    'agent_version?': type('string.integer.parse').pipe(type('number >= 1')),
    'statuses?': listParam(type.enumerated(...SESSION_STATUSES)),
    'include_archived?': boolParam,
    'created_at[gt]?': timestampParam,
    'created_at[gte]?': timestampParam,
    'created_at[lt]?': timestampParam,
    'created_at[lte]?': timestampParam,
    'deployment_id?': DeploymentId,
    'memory_store_id?': MemoryStoreId,
  }).narrow(
    (q, ctx) =>
      q.agent_version === undefined ||
      q.agent_id !== undefined ||
      ctx.reject({ problem: 'requires agent_id (a version means nothing without its agent)', relativePath: ['agent_version'] }),
  ),
)

export type BudgetParams = typeof Budget.infer
export type AgentRefParamsT = typeof AgentRefParams.infer
export type SessionCreateInput = typeof SessionCreate.infer
export type SessionUpdateInput = typeof SessionUpdate.infer
export type SessionListInput = typeof SessionListQuery.infer
