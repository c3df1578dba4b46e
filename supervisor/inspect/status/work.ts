import { decode } from '../../../protocol/codec.js'
import { WorkKind } from '../../../protocol/ops/work.js'
import { Buckets } from '../../../protocol/subjects.js'
import type { Queue } from '../../../actors/work/index.js'
import type { Gaps, Reads } from './reads.js'
import { byCodePoint } from './text.js'

/** Queues listed one by one; the rest are counted. */
export const QUEUES_SHOWN = 20
const PREFIX = `${WorkKind.kind}.`

/** One environment's self-hosted work queue as its record stores it (the counts of its stats endpoint, and more). */
export interface WorkQueueView {
  environment_id: string
  /** Queued and not handed out: what a poll takes next (the stats' `depth`). */
  depth: number
  /** Handed out by a poll and not acknowledged yet (the stats' `pending`). */
  pending: number
  /** Acknowledged (`starting`) or beating (`active`). */
  running: number
  stopping: number
  /** Stopped items kept for get and list (at most 100). */
  stopped: number
  /**
   * Workers holding a lease now: one per starting, active or stopping item whose lease has not lapsed. Workers that
   * only poll are known to the queue's owner alone, in memory (`workers_polling` of its stats endpoint), never stored.
   */
  workers: number
  oldest_queued_at: string | null
  /** The latest heartbeat of any of its items. */
  latest_heartbeat_at: string | null
}

export interface WorkQueuesView {
  /** Environments with a queue record. */
  total: number
  totals: { depth: number; pending: number; running: number; stopping: number; workers: number }
  /** The deepest first; queues with nothing live are counted, not listed. */
  listed: WorkQueueView[]
  more: number
  /** Queues holding only stopped items, or none. */
  idle: number
  gaps: Gaps
}

/** From the `work_queue.<env id>` records of troupe_work_queues. */
export async function readWorkQueues(reads: Reads, now: number): Promise<WorkQueuesView> {
  const records = await reads.bucket(Buckets.workQueues, PREFIX)
  const view: WorkQueuesView = {
    total: 0,
    totals: { depth: 0, pending: 0, running: 0, stopping: 0, workers: 0 },
    listed: [],
    more: 0,
    idle: 0,
    gaps: reads.gaps,
  }
  const live: WorkQueueView[] = []
  for (const [key, v] of records?.values ?? []) {
    view.total++
    const q = queueView(key.slice(PREFIX.length), decode<Queue>(v), now)
    for (const k of Object.keys(view.totals) as Array<keyof WorkQueuesView['totals']>) view.totals[k] += q[k]
    if (q.depth + q.pending + q.running + q.stopping === 0) view.idle++
    else live.push(q)
  }
  live.sort((a, b) => b.depth + b.pending - (a.depth + a.pending) || b.running - a.running || byCodePoint(a.environment_id, b.environment_id))
  view.listed = live.slice(0, QUEUES_SHOWN)
  view.more = live.length - view.listed.length
  return view
}

function queueView(env: string, q: Queue, now: number): WorkQueueView {
  const v: WorkQueueView = {
    environment_id: env,
    depth: 0,
    pending: 0,
    running: 0,
    stopping: 0,
    stopped: 0,
    workers: 0,
    oldest_queued_at: null,
    latest_heartbeat_at: null,
  }
  for (const it of q.items) {
    if (it.state === 'queued') {
      if (it.handed_at === null) v.depth++
      else v.pending++
      if (v.oldest_queued_at === null || it.created_at < v.oldest_queued_at) v.oldest_queued_at = it.created_at
    } else if (it.state === 'stopped') v.stopped++
    else if (it.state === 'stopping') v.stopping++
    else v.running++
    if (it.lease_until !== null && it.lease_until > now) v.workers++
    if (it.latest_heartbeat_at && (v.latest_heartbeat_at === null || it.latest_heartbeat_at > v.latest_heartbeat_at))
      v.latest_heartbeat_at = it.latest_heartbeat_at
  }
  return v
}
