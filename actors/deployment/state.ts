import type { AgentReference } from '../../protocol/schemas/agent.js'
import { occurrencesAfter, UPCOMING_RUNS } from '../../protocol/schedule.js'
import type { Deployment, DeploymentRun, SessionFromRunInput, TriggerContext } from '../../protocol/schemas/deployment.js'

/**
 * How deployments sit in their buckets:
 *
 *   troupe_deployments      deployment.<id>   the deployment's state (below): the actor's record (the kit's
 *                                              `<kind>.<id>`), written only by the owner of its partition, fenced by
 *                                              its revision; a create (any host) is the one write that makes it.
 *                           work.<id>         the kit's work marker, while runs are pending.
 *   troupe_deployment_runs  run.<id>          a recorded run, written once (create), never changed.
 *
 * A run is first an intent in its deployment's state (`runs`, the kind's work), stored before anything of it happens;
 * its owner then creates the session (id and Idempotency-Key derived from the run id, so doing it again finds the same
 * session), records the run, and drops the intent. A crash anywhere in between is resumed by the partition's next
 * owner: the session exists exactly when the run records it.
 */
export interface DeploymentState {
  /** The deployment as the API shows it, but `schedule.upcoming_runs_at`, computed when it is read. */
  deployment: StoredDeployment
  /** Fingerprint of the create request, when it carried an Idempotency-Key: its retries must match it. */
  created_by?: string
  /**
   * The earliest occurrence the schedule may fire (RFC 3339): set when the schedule is set or changed and on unpause,
   * so neither backfills. Null without a schedule.
   */
  fires_from: string | null
  /** The latest occurrence that made a run (its `scheduled_at`); an occurrence at or before it is a duplicate. */
  last_scheduled_at: string | null
  /** Runs whose intent is stored and which are not recorded yet, oldest first. */
  runs: PendingRun[]
}

export type StoredDeployment = Omit<Deployment, 'schedule'> & {
  schedule: (Omit<NonNullable<Deployment['schedule']>, 'upcoming_runs_at'> & { upcoming_runs_at?: never }) | null
}

/** A run decided on and not yet recorded: everything it needs, copied from the deployment when it was decided. */
export interface PendingRun {
  id: string
  trigger_context: TriggerContext
  created_at: string
  agent: AgentReference
  /** The session it creates (the deployment's budget, agent and initial events as they were). */
  session: SessionFromRunInput
}

export const DEPLOYMENT_PREFIX = 'deployment.'
export const RUN_PREFIX = 'run.'
export const runKey = (id: string) => `${RUN_PREFIX}${id}`

/** A run as read: every record carries `trigger_type`, those stored before it was written too. */
export const runView = (r: Omit<DeploymentRun, 'trigger_type'> & { trigger_type?: unknown }): DeploymentRun => {
  const { trigger_type: _stored, trigger_context, created_at, ...rest } = r
  return { ...rest, trigger_type: trigger_context.type, trigger_context, created_at }
}

export type { DeploymentRun }

/** The deployment as the API shows it at `at` (epoch ms, the schedule clock): its next occurrences filled in. */
export function viewOf(s: DeploymentState, at: number): Deployment {
  return deploymentView(s.deployment, s.fires_from, at)
}

/** As `viewOf`, from the stored deployment alone (lists: `fires_from` is read from the state beside it). */
export function deploymentView(d: StoredDeployment, firesFrom: string | null, at: number): Deployment {
  if (!d.schedule) return d as Deployment
  // Occurrences from `fires_from` on may fire (a schedule set or unpaused just now fires nothing before).
  const after = Math.max(at, firesFrom === null ? at : Date.parse(firesFrom) - 1)
  const upcoming = d.archived_at ? [] : occurrencesAfter(d.schedule, after, UPCOMING_RUNS).map((t) => new Date(t).toISOString())
  return { ...d, schedule: { ...d.schedule, upcoming_runs_at: upcoming } }
}
