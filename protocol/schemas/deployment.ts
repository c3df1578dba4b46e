import { type } from 'arktype'
import type { AgentReference } from './agent.js'
import { cronProblem, isTimezone, type CronSchedule } from '../schedule.js'
import { Metadata, MetadataPatch, boolParam, limitParam, notArray, pageParam, timestampParam } from './common.js'
import {
  SystemMessageParams,
  UserDefineOutcomeParams,
  UserMessageParams,
  tagged,
  type SystemMessageParamsT,
  type UserDefineOutcomeParamsT,
  type UserMessageParamsT,
} from './events.js'
import { AgentId, DeploymentId, EnvironmentId, VaultId } from './ids.js'
import { ResourceParams, type ResourceParamsT } from './resource.js'
import { Budget, type BudgetParams } from './session.js'
import { listOf } from './list.js'
import { lazy } from './lazy.js'

/**
 * Deployments and their runs on the wire (WIRE.md §13–§14, SPEC "Deployments", DECISIONS "Deployments and runs").
 * Shapes only: whether the agent and environment exist and can be used, resource kinds and vaults (not built yet),
 * budgets against the agent's models, are the deployment actor's to answer (404/400/422).
 */

/** The agent a deployment runs: an id (its latest version) or `{type: "agent", id, version?}`. */
export const DeploymentAgentParams = lazy(() => AgentId.or({ '+': 'reject', type: "'agent'", id: AgentId, 'version?': type('number.integer >= 1') }))

export const ScheduleParams = lazy(() =>
  type({
    '+': 'reject',
    type: "'cron'",
    expression: type('string <= 256').narrow((s, ctx) => {
      const problem = cronProblem(s)
      return problem === undefined || ctx.reject({ expected: `a five-field POSIX cron expression: ${problem}`, actual: JSON.stringify(s) })
    }),
    timezone: type('string').narrow(
      (s, ctx) => isTimezone(s) || ctx.reject({ expected: 'an IANA timezone such as America/New_York or UTC', actual: JSON.stringify(s) }),
    ),
  }),
)

const InitialEvent = lazy(() =>
  tagged(
    ['user.message', 'user.define_outcome', 'system.message'],
    type.or(UserMessageParams, UserDefineOutcomeParams, SystemMessageParams),
    'user.message, user.define_outcome or system.message, the only event types allowed in a deployment',
  ),
)

/** What a system.message in a deployment annotates: the user event right before it (SPEC "Deployment"). */
const ANNOTATED = ['user.message', 'user.define_outcome']

export const InitialEvents = lazy(() =>
  listOf(InitialEvent, { min: 1, max: 50 }).narrow((events, ctx) => {
    for (const [i, e] of events.entries()) {
      if (e.type !== 'system.message') continue
      const prev = events[i - 1]?.type
      if (prev === undefined || !ANNOTATED.includes(prev)) {
        return ctx.reject({
          problem: 'is a system.message, which must directly follow the user.message or user.define_outcome it annotates',
          relativePath: [i],
        })
      }
    }
    return true
  }),
)

const Name = lazy(() => type('0 < string <= 256'))
const Description = lazy(() => type('string <= 2048').or('null'))

export const DeploymentCreate = lazy(() =>
  type({
    '+': 'reject',
    agent: DeploymentAgentParams,
    environment_id: EnvironmentId,
    name: Name,
    initial_events: InitialEvents,
    'description?': Description,
    'resources?': listOf(ResourceParams, { max: 500 }),
    'vault_ids?': listOf(VaultId, { max: 50 }),
    'schedule?': ScheduleParams.or('null'),
    'metadata?': Metadata,
    'budget?': Budget.or('null'),
  }),
)

/** Every field optional: omitted keeps; the arrays replace whole (null or [] clears where a field may be empty). */
export const DeploymentUpdate = lazy(() =>
  type({
    '+': 'reject',
    'agent?': DeploymentAgentParams,
    'environment_id?': EnvironmentId,
    'name?': Name,
    'initial_events?': InitialEvents,
    'description?': Description,
    'resources?': listOf(ResourceParams, { max: 500 }).or('null'),
    'vault_ids?': listOf(VaultId, { max: 50 }).or('null'),
    'schedule?': ScheduleParams.or('null'),
    'metadata?': MetadataPatch.or('null'),
    'budget?': Budget.or('null'),
  }).narrow(notArray),
)

/**
 * Internal (the session kind's `create.run`, called by a deployment's run; no route): the session a run creates, from
 * what the run copied of its deployment. Its id and Idempotency-Key come from the run's id, so a run retried after a
 * crash finds the session its first attempt made.
 */
export const SessionFromRun = lazy(() =>
  type({
    '+': 'reject',
    deployment_id: DeploymentId,
    agent: { '+': 'reject', type: "'agent'", id: AgentId, version: 'number.integer >= 1' },
    environment_id: EnvironmentId,
    initial_events: InitialEvents,
    resources: listOf(ResourceParams, { max: 500 }),
    vault_ids: listOf(VaultId, { max: 50 }),
    budget: Budget.or('null'),
  }),
)

export const DEPLOYMENT_STATUSES = ['active', 'paused'] as const

export const DeploymentListQuery = lazy(() =>
  type({
    'agent_id?': AgentId,
    'status?': type.enumerated(...DEPLOYMENT_STATUSES),
    'include_archived?': boolParam,
    'created_at[gte]?': timestampParam,
    'created_at[lte]?': timestampParam,
    'limit?': limitParam(100),
    'page?': pageParam,
  }).narrow(
    (q, ctx) =>
      q.status === undefined ||
      q.include_archived === undefined ||
      ctx.reject({ problem: 'cannot be combined with include_archived (archived deployments report status active)', relativePath: ['status'] }),
  ),
)

export const TRIGGER_TYPES = ['manual', 'schedule'] as const

export const DeploymentRunListQuery = lazy(() =>
  type({
    'deployment_id?': DeploymentId,
    'has_error?': boolParam,
    'trigger_type?': type.enumerated(...TRIGGER_TYPES),
    'created_at[gt]?': timestampParam,
    'created_at[gte]?': timestampParam,
    'created_at[lt]?': timestampParam,
    'created_at[lte]?': timestampParam,
    'limit?': limitParam(100),
    'page?': pageParam,
  }),
)

export type DeploymentAgentParamsT = typeof DeploymentAgentParams.infer
export type ScheduleParamsT = typeof ScheduleParams.infer
export type DeploymentInitialEvent = UserMessageParamsT | UserDefineOutcomeParamsT | SystemMessageParamsT
export type SessionFromRunInput = typeof SessionFromRun.infer
export type DeploymentCreateInput = typeof DeploymentCreate.infer
export type DeploymentUpdateInput = typeof DeploymentUpdate.infer
export type DeploymentListInput = typeof DeploymentListQuery.infer
export type DeploymentRunListInput = typeof DeploymentRunListQuery.infer

// Resource shapes as returned (WIRE.md §13–§14).

export type DeploymentStatus = (typeof DEPLOYMENT_STATUSES)[number]
export type TriggerType = (typeof TRIGGER_TYPES)[number]

/** The error types of a run (WIRE §14); a deployment paused by a scheduled run's error names one of the pausing ones. */
export const RUN_ERROR_TYPES = [
  'environment_archived_error',
  'agent_archived_error',
  'environment_not_found_error',
  'vault_not_found_error',
  'vault_archived_error',
  'file_not_found_error',
  'memory_store_archived_error',
  'skill_not_found_error',
  'session_resource_not_found_error',
  'workspace_archived_error',
  'organization_disabled_error',
  'session_rate_limited_error',
  'session_creation_rejected_error',
  'unknown_error',
  'self_hosted_resources_unsupported_error',
  'mcp_egress_blocked_error',
] as const
export type RunErrorType = (typeof RUN_ERROR_TYPES)[number]

/** Run errors after which a deployment keeps its schedule; every other error of a scheduled run pauses it (WIRE §13). */
export const NON_PAUSING_RUN_ERRORS: readonly RunErrorType[] = ['session_rate_limited_error', 'session_creation_rejected_error']

export type PausedReason = { type: 'manual' } | { type: 'error'; error: { type: RunErrorType } }

export interface DeploymentSchedule extends CronSchedule {
  /** When the latest scheduled run started (manual runs do not count); null until one has. */
  last_run_at: string | null
  /** The next five occurrences; empty once archived. */
  upcoming_runs_at: string[]
}

export interface Deployment {
  id: string
  type: 'deployment'
  name: string
  description: string | null
  agent: AgentReference
  environment_id: string
  initial_events: DeploymentInitialEvent[]
  resources: ResourceParamsT[]
  vault_ids: string[]
  metadata: Record<string, string>
  schedule: DeploymentSchedule | null
  status: DeploymentStatus
  paused_reason: PausedReason | null
  budget: BudgetParams | null
  created_at: string
  updated_at: string
  archived_at: string | null
}

export type TriggerContext = { type: 'manual' } | { type: 'schedule'; scheduled_at: string }

export interface DeploymentRun {
  id: string
  type: 'deployment_run'
  deployment_id: string
  agent: AgentReference
  /** Exactly one of `session_id` and `error` is non-null. */
  session_id: string | null
  error: { type: RunErrorType; message: string } | null
  /** SPEC's field, the same fact as `trigger_context.type` (the client's); records stored before it lack it (`runView`). */
  trigger_type: TriggerType
  trigger_context: TriggerContext
  created_at: string
}
