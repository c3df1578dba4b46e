import { decode } from '../../../protocol/codec.js'
import { Buckets } from '../../../protocol/subjects.js'
import type { DeploymentRun } from '../../../protocol/schemas/deployment.js'
import {
  type ClaimValue,
  DEPLOYMENT_PREFIX,
  type DeploymentState,
  type FiringFields,
  fireAfter,
  nextToFire,
  parseClaimKey,
  RUN_PREFIX,
  type Scheduled,
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
  const view: DeploymentsView = {
    total: 0,
    active: 0,
    paused: 0,
    archived: 0,
    clock: { source: 'wall', now: new Date(now).toISOString(), rate: 1, wall: true },
    schedulers: [],
    listed: [],
    more: 0,
    runs_read: 0,
    gaps: reads.gaps,
  }
  // The schedulers' beats first: they tell the clock each deployment's next fire is worked out on, as it is read.
  const beats = await reads.bucket(Buckets.orchestrators, 'orch.')
  const { clock, schedulers, at } = scheduleClock(beats?.values, now, env)
  view.clock = clock
  view.schedulers = schedulers
  const nextFire = rememberedNextFire(at)
  const kept: Array<{ s: ListedState; next: number | undefined }> = []
  const [, claims, runs] = await Promise.all([
    reads.bucket(Buckets.deployments, DEPLOYMENT_PREFIX, (_, v) => {
      const s = decode<DeploymentState>(v)
      view.total++
      if (s.deployment.archived_at !== null) {
        view.archived++
        return
      }
      view[s.deployment.status]++
      const scheduled = scheduledOf(s)
      kept.push({ s: listedState(s), next: scheduled && nextFire(scheduled) })
    }),
    reads.bucket(Buckets.scheduleClaims, 'claim.'),
    reads.newest(`KV_${Buckets.deploymentRuns}`, `$KV.${Buckets.deploymentRuns}.${RUN_PREFIX}>`, RUNS_SCANNED),
  ])
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
  view.runs_read = runs?.length ?? 0
  const all = kept.map(({ s, next }) => deploymentOf(s, lastRun.get(s.deployment.id), lastClaim.get(s.deployment.id), at, () => next))
  // The next to fire first; then the paused and those without a schedule, newest first.
  all.sort(
    (a, b) =>
      Number(a.next_fire_at === null) - Number(b.next_fire_at === null) || byCodePoint(a.next_fire_at ?? '', b.next_fire_at ?? '') || byCodePoint(b.id, a.id),
  )
  view.listed = all.slice(0, DEPLOYMENTS_SHOWN)
  view.more = all.length - view.listed.length
  return view
}

/** A deployment's state as kept for listing: what it shows and what says when it fires, without its runs' inputs. */
export type ListedState = FiringFields & {
  deployment: Pick<DeploymentState['deployment'], 'id' | 'name' | 'status' | 'paused_reason' | 'schedule' | 'archived_at'>
  runs: { length: number }
}

const listedState = (s: DeploymentState): ListedState => {
  const { id, name, status, paused_reason, schedule, archived_at } = s.deployment
  return {
    deployment: { id, name, status, paused_reason, schedule, archived_at },
    fires_from: s.fires_from,
    last_scheduled_at: s.last_scheduled_at,
    runs: { length: s.runs.length },
  }
}

/**
 * `nextToFire` at `at`, remembered by schedule and the minute it looks after: occurrences fall on whole minutes, so all
 * instants of one minute share the next. Cron evaluation costs 0.4 ms (UTC) to 1.2 ms (another zone) here; most
 * deployments of a cluster share a few schedules and count from the same minute, so few are evaluated.
 */
function rememberedNextFire(at: number): (s: Scheduled) => number | undefined {
  const seen = new Map<string, number | undefined>()
  return (s) => {
    const key = `${s.schedule.expression}\n${s.schedule.timezone}\n${Math.floor(fireAfter(s, Number.NEGATIVE_INFINITY, at) / 60_000)}`
    if (!seen.has(key)) seen.set(key, nextToFire(s, Number.NEGATIVE_INFINITY, at))
    return seen.get(key)
  }
}

/** One deployment as listed, `at` the schedule clock's now: when the scheduler fires it next, its last run and claim. */
export function deploymentOf(
  s: ListedState,
  run: DeploymentRun | undefined,
  claim: { at: number; value: ClaimValue } | undefined,
  at: number,
  nextFire: (s: Scheduled) => number | undefined = (x) => nextToFire(x, Number.NEGATIVE_INFINITY, at),
): DeploymentView {
  const d = s.deployment
  const scheduled = scheduledOf(s)
  const next = scheduled ? nextFire(scheduled) : undefined
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
