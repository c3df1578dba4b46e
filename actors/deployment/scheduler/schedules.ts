import type { KV, KvWatchEntry } from '@nats-io/kv'
import type { QueuedIterator } from '@nats-io/nats-core'
import { decode } from '../../../protocol/codec.js'
import { isId } from '../../../protocol/ids.js'
import { retryWhileStarting } from '../../kit/index.js'
import type { CronSchedule } from '../../../protocol/schedule.js'
import { DEPLOYMENT_PREFIX, type DeploymentState } from '../state.js'

/** What the scheduler needs of a deployment whose schedule fires: the rest of its state is the kind's. */
export interface Scheduled {
  schedule: CronSchedule
  /** The earliest occurrence it may fire (epoch ms; an occurrence at it fires): set by a schedule change and by unpause. */
  firesFrom: number
  /** The latest occurrence that made a run (epoch ms); one at or before it is done. */
  lastScheduled: number
}

const msOf = (t: string | null) => (t === null ? Number.NEGATIVE_INFINITY : Date.parse(t))

/** What of a deployment's state says whether and from when it fires. */
export type FiringFields = Pick<DeploymentState, 'fires_from' | 'last_scheduled_at'> & {
  deployment: Pick<DeploymentState['deployment'], 'schedule' | 'archived_at' | 'paused_reason'>
}

/** The schedule of a deployment that fires: one with a schedule, neither paused nor archived. Undefined otherwise. */
export function scheduledOf(state: FiringFields): Scheduled | undefined {
  const d = state.deployment
  if (!d.schedule || d.archived_at !== null || d.paused_reason !== null) return undefined
  const { expression, timezone } = d.schedule
  return { schedule: { type: 'cron', expression, timezone }, firesFrom: msOf(state.fires_from), lastScheduled: msOf(state.last_scheduled_at) }
}

/**
 * Every deployment's schedule, as a watch of `troupe_deployments` delivers its records (`deployment.<id>`; work
 * markers ignored): `onChange(id, scheduled)` for each record stored and each one written from then on, `scheduled`
 * undefined when it does not fire.
 */
export async function watchSchedules(kv: KV, onChange: (id: string, s: Scheduled | undefined) => void): Promise<{ stop(): void }> {
  const watcher: QueuedIterator<KvWatchEntry> = await retryWhileStarting('schedules watch', () => kv.watch({ key: `${DEPLOYMENT_PREFIX}>` }))
  void (async () => {
    for await (const e of watcher) {
      const id = e.key.slice(DEPLOYMENT_PREFIX.length)
      if (isId('depl', id)) onChange(id, e.operation === 'PUT' ? scheduledOf(decode<DeploymentState>(e.value)) : undefined)
    }
  })()
  return { stop: () => watcher.stop() }
}
