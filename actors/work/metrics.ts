import { ReadGauge } from '../../metrics/index.js'
import type { Queue } from './state.js'

const depth = new ReadGauge(
  'troupe_work_queue_items',
  "Self-hosted work items of the queues this host holds, by state: queued (waiting for a worker's poll), pending (handed out, not yet acknowledged)",
  ['state'],
)

/** What the gauge needs of the work kind's durable state. */
export interface QueuesHeld {
  inMemory(): Iterable<[id: string, queue: Queue]>
  holds(id: string): boolean
}

/**
 * The depth of the queues this host holds, summed (every environment's together: an environment id is no label). A
 * queue changes only through its actor, so what was counted of one that left memory still holds while this host keeps
 * its partition: those counts are kept, and dropped once the partition goes.
 */
export function trackQueues(queues: QueuesHeld): () => void {
  const seen = new Map<string, { queued: number; pending: number }>()
  return depth.track(() => {
    for (const [env, q] of queues.inMemory()) seen.set(env, countOf(q))
    let queued = 0
    let pending = 0
    for (const [env, c] of seen) {
      if (!queues.holds(env)) {
        seen.delete(env)
        continue
      }
      queued += c.queued
      pending += c.pending
    }
    return [
      [['queued'], queued],
      [['pending'], pending],
    ]
  })
}

function countOf(q: Queue): { queued: number; pending: number } {
  let queued = 0
  let pending = 0
  for (const i of q.items) {
    if (i.state !== 'queued') continue
    if (i.handed_at === null) queued++
    else pending++
  }
  return { queued, pending }
}
