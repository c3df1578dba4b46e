import { Buckets } from '../../../protocol/subjects.js'
import type { ScheduleClockView } from './clock.js'
import { type DeploymentView, type DeploymentsView, RUNS_SCANNED } from './deployments.js'
import { age, emptyHeading, gapLines, when } from './text.js'

/** The deployments section, as lines. */
export function deploymentLines(d: DeploymentsView): string[] {
  const lines = [
    d.total === 0
      ? emptyHeading('deployments', Buckets.deployments, d.gaps)
      : `deployments: ${d.total} (${d.active} active, ${d.paused} paused, ${d.archived} archived)`,
  ]
  const clockNow = Date.parse(d.clock.now)
  lines.push(`  schedule clock: ${clockLine(d.clock)}`)
  lines.push(
    d.schedulers.length
      ? `  schedulers: ${d.schedulers.length} live: ${d.schedulers.map((s) => `${s.id} (beat ${age(s.beat_age_ms)} ago)`).join(', ')}`
      : '  schedulers: NONE LIVE: no `troupe orchestrate` or `troupe start` runs, so no schedule fires',
  )
  for (const x of d.listed) lines.push(`  ${deploymentLine(x, clockNow)}`)
  if (d.more) lines.push(`  … and ${d.more} more`)
  if (d.listed.length && d.runs_read >= RUNS_SCANNED) lines.push(`  (last runs looked for among the newest ${RUNS_SCANNED} run records only)`)
  lines.push(...gapLines(d.gaps, [Buckets.deployments]))
  return lines
}

function clockLine(c: ScheduleClockView): string {
  const from =
    c.source === 'scheduler'
      ? `, from scheduler ${c.scheduler}'s beat`
      : c.source === 'TROUPE_SCHEDULE_CLOCK'
        ? ', from TROUPE_SCHEDULE_CLOCK here (no scheduler beat tells one)'
        : ''
  return c.wall ? `wall time${from}` : `${c.now}, ${c.rate}× wall time${from}; times below are on this clock`
}

function deploymentLine(x: DeploymentView, now: number): string {
  const parts = [x.id, JSON.stringify(x.name)]
  if (x.status === 'paused') parts.push(`PAUSED (${x.paused_reason ?? '?'})`)
  parts.push(x.schedule ? `cron ${x.schedule}` : 'manual runs only')
  if (x.next_fire_at) parts.push(x.due ? `next ${x.next_fire_at} (DUE)` : `next ${when(x.next_fire_at, now)}`)
  else if (x.schedule && x.status === 'active') parts.push('never fires again')
  const r = x.last_run
  parts.push(r ? `last run ${when(r.created_at, now)} ${r.trigger} → ${r.session_id ?? r.error ?? '?'}` : 'last run none seen')
  if (x.last_scheduled_at) parts.push(`last scheduled ${x.last_scheduled_at}`)
  if (x.pending_runs) parts.push(`${x.pending_runs} run${x.pending_runs > 1 ? 's' : ''} pending`)
  const c = x.claim
  if (c) parts.push(c.state === 'done' ? `claim ${c.occurrence} done (${c.outcome})` : `claim ${c.occurrence} ${c.state} by ${c.holder}`)
  return parts.join('  ')
}
