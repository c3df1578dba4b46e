import { Buckets } from '../../../protocol/subjects.js'
import type { WorkQueuesView } from './work.js'
import { count, emptyHeading, gapLines, when } from './text.js'

/** The work queues section, as lines. */
export function workLines(w: WorkQueuesView, now: number): string[] {
  const t = w.totals
  const lines = [
    w.total === 0
      ? emptyHeading('work queues', Buckets.workQueues, w.gaps)
      : `work queues: ${count(w.total, 'environment')}; ${t.depth} queued, ${t.pending} pending, ${t.running} running, ${t.stopping} stopping; ${count(t.workers, 'worker')} holding a lease`,
  ]
  for (const q of w.listed) {
    lines.push(
      `  ${q.environment_id}  queued ${q.depth}  pending ${q.pending}  running ${q.running}  stopping ${q.stopping}  workers ${q.workers}` +
        (q.oldest_queued_at ? `  oldest queued ${when(q.oldest_queued_at, now)}` : '') +
        (q.latest_heartbeat_at ? `  last beat ${when(q.latest_heartbeat_at, now)}` : ''),
    )
  }
  if (w.more) lines.push(`  … and ${w.more} more`)
  if (w.idle) lines.push(`  ${w.idle}${w.listed.length ? ' more' : ''} with nothing live`)
  if (w.total) lines.push("  (workers that only poll are in the queue owner's memory: GET /v1/environments/{id}/work/stats)")
  lines.push(...gapLines(w.gaps, [Buckets.workQueues]))
  return lines
}
