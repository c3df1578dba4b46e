import { ReadGauge } from '../../metrics/index.js'
import type { Queue } from './state.js'

const depth = new ReadGauge(
  'troupe_work_queue_items',
  "Self-hosted work items of the queues this host holds, by state: queued (waiting for a worker's poll), pending (handed out, not yet acknowledged)",
  ['state'],
)

/** The depth of the queues in memory here, summed (every environment's together: an environment id is no label). */
export function trackQueues(queues: () => Iterable<Queue>): () => void {
  return depth.track(() => {
    let queued = 0
    let pending = 0
    for (const q of queues()) {
      for (const i of q.items) {
        if (i.state !== 'queued') continue
        if (i.handed_at === null) queued++
        else pending++
      }
    }
    return [
      [['queued'], queued],
      [['pending'], pending],
    ]
  })
}
