import { decode } from '../../../protocol/codec.js'
import { Buckets } from '../../../protocol/subjects.js'
import type { DeploymentRun } from '../../../protocol/schemas/deployment.js'
import {
  type ClaimValue,
  DEPLOYMENT_PREFIX,
  type DeploymentState,
  nextToFire,
  parseClaimKey,
  RUN_PREFIX,
  scheduledOf,
} from '../../../actors/deployment/index.js'
import { scheduleClock, type ScheduleClockView, type SchedulerView } from './clock.js'
import type { Gaps, Reads } from './reads.js'
import { byCodePoint } from './text.js'

/** Deployments listed one by one; the rest are counted. */
export const DEPLOYMENTS_SHOWN = 20
/** Run records read, the newest: runs are never removed, so reading them all grows without bound. */
export const RUNS_SCANNED = 2000

export interface DeploymentView {
  id: string
  name: string
  status: 'active' | 'paused'
  /** `manual`, or the error type of the run that paused it. */
  paused_reason: string | null
  /** `<expression> <timezone>`, null without a schedule (manual runs only). */
  schedule: string | null
  /** The occurrence the scheduler fires next (schedule clock, RFC 3339); null when paused, without a schedule, or never again. */
  next_fire_at: string | null
  /** `next_fire_at` is at or before the schedule clock's now: due, about to fire or firing. */
  due: boolean
  /** The latest occurrence that made a run (the deployment's `last_scheduled_at`). */
  last_scheduled_at: string | null
  /** Runs decided on and not yet recorded (their sessions being made). */
  pending_runs: number
  /** The newest run record found among the newest RUNS_SCANNED. */
  last_run: { id: string; created_at: string; trigger: string; session_id: string | null; error: string | null } | null
  /** The newest claim on one of its occurrences (troupe_schedule_claims, kept 10 minutes). */
  claim: { occurrence: string; holder: string | null; state: 'held' | 'lapsed' | 'done'; outcome?: string } | null
}

export interface DeploymentsView {
  /** Archived ones included (never listed). */
  total: number
  active: number
  paused: number
  archived: number
  clock: ScheduleClockView
  schedulers: SchedulerView[]
  /** Not archived: due or next to fire first, then the paused and those without a schedule. */
  listed: DeploymentView[]
  more: number
  /** Run records read (the newest of `troupe_deployment_runs`) to find each one's last run. */
  runs_read: number
  gaps: Gaps
}

/** From troupe_deployments, troupe_orchestrators, troupe_schedule_claims and the newest of troupe_deployment_runs. */
export async function readDeployments(reads: Reads, now: number, env: NodeJS.ProcessEnv): Promise<DeploymentsView> {
  const [states, beats, claims, runs] = await Promise.all([
    reads.bucket(Buckets.deployments, DEPLOYMENT_PREFIX),
    reads.bucket(Buckets.orchestrators, 'orch.'),
    reads.bucket(Buckets.scheduleClaims, 'claim.'),
    reads.newest(`KV_${Buckets.deploymentRuns}`, `$KV.${Buckets.deploymentRuns}.${RUN_PREFIX}>`, RUNS_SCANNED),
  ])
  const { clock, schedulers, at } = scheduleClock(beats?.values, now, env)
  const lastRun = new Map<string, DeploymentRun>()
  for (const data of runs ?? []) {
    const r = decode<DeploymentRun>(data)
    const seen = lastRun.get(r.deployment_id)
    if (!seen || seen.created_at <= r.created_at) lastRun.set(r.deployment_id, r)
  }
  const lastClaim = new Map<string, { at: number; value: ClaimValue }>()
  for (const [key, v] of claims?.values ?? []) {
    const k = parseClaimKey(key)
    if (k && (lastClaim.get(k.id)?.at ?? Number.NEGATIVE_INFINITY) < k.at) lastClaim.set(k.id, { at: k.at, value: decode<ClaimValue>(v) })
  }
  const view: DeploymentsView = {
    total: 0,
    active: 0,
    paused: 0,
    archived: 0,
    clock,
    schedulers,
    listed: [],
    more: 0,
    runs_read: runs?.length ?? 0,
    gaps: reads.gaps,
  }
  const all: DeploymentView[] = []
  for (const v of states?.values.values() ?? []) {
    const s = decode<DeploymentState>(v)
    const d = s.deployment
    view.total++
    if (d.archived_at !== null) {
      view.archived++
      continue
    }
    view[d.status]++
    all.push(deploymentOf(s, lastRun.get(d.id), lastClaim.get(d.id), at))
  }
  // The next to fire first; the paused and those without a schedule after, newest first.
  all.sort(
    (a, b) =>
      Number(a.next_fire_at === null) - Number(b.next_fire_at === null) || byCodePoint(a.next_fire_at ?? '', b.next_fire_at ?? '') || byCodePoint(b.id, a.id),
  )
  view.listed = all.slice(0, DEPLOYMENTS_SHOWN)
  view.more = all.length - view.listed.length
  return view
}

/** One deployment as listed, `at` the schedule clock's now: when the scheduler fires it next, its last run and claim. */
export function deploymentOf(
  s: DeploymentState,
  run: DeploymentRun | undefined,
  claim: { at: number; value: ClaimValue } | undefined,
  at: number,
): DeploymentView {
  const d = s.deployment
  const scheduled = scheduledOf(s)
  const next = scheduled ? nextToFire(scheduled, Number.NEGATIVE_INFINITY, at) : undefined
  return {
    id: d.id,
    name: d.name,
    status: d.status,
    paused_reason: d.paused_reason === null ? null : d.paused_reason.type === 'manual' ? 'manual' : d.paused_reason.error.type,
    schedule: d.schedule ? `${d.schedule.expression} ${d.schedule.timezone}` : null,
    next_fire_at: next === undefined ? null : new Date(next).toISOString(),
    due: next !== undefined && next <= at,
    last_scheduled_at: s.last_scheduled_at,
    pending_runs: s.runs.length,
    last_run: run
      ? { id: run.id, created_at: run.created_at, trigger: run.trigger_context.type, session_id: run.session_id, error: run.error?.type ?? null }
      : null,
    claim: claim
      ? 'done' in claim.value
        ? { occurrence: new Date(claim.at).toISOString(), holder: null, state: 'done', outcome: String(claim.value.done) }
        : { occurrence: new Date(claim.at).toISOString(), holder: claim.value.holder, state: claim.value.until > at ? 'held' : 'lapsed' }
      : null,
  }
}
