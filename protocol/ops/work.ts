import type { Page } from '../page.js'
import {
  type Work,
  type WorkHeartbeat,
  WorkHeartbeatQuery,
  WorkListQuery,
  WorkPollQuery,
  WorkQueueInput,
  type WorkQueueStats,
  WorkSessionStopInput,
  WorkStopInput,
  WorkClaimInput,
  WorkUpdateInput,
} from '../schemas/work.js'
import { defineKind, type IdSpec, returns } from './define.js'

/** A work item, named beside its environment (WIRE §5). */
export const WorkId: IdSpec = { param: 'work_id', prefix: 'work', noun: 'Work' }

/**
 * The self-hosted work queue of one environment: one actor per environment on the host owning its partition, whose
 * state holds the environment's items and their leases (actors/work/). Polls, acks, beats and stops of one environment
 * meet there, so a claim is decided in one place and a blocked poll is woken in memory when an item is queued.
 */
export const WorkKind = defineKind(
  // Not `work`: its records, `<kind>.<env id>`, would read like the kit's `work.<id>` markers.
  'work_queue',
  { param: 'environment_id', prefix: 'env', noun: 'Environment' },
  {
    poll: { placement: 'owner', query: WorkPollQuery, reply: returns<Work | null>() },
    stats: { placement: 'owner', reply: returns<WorkQueueStats>() },
    list: { placement: 'owner', query: WorkListQuery, reply: returns<Page<Work>>() },
    get: { placement: 'owner', sub: WorkId, reply: returns<Work>() },
    update: { placement: 'owner', sub: WorkId, body: WorkUpdateInput, reply: returns<Work>() },
    ack: { placement: 'owner', sub: WorkId, reply: returns<Work>() },
    heartbeat: { placement: 'owner', sub: WorkId, query: WorkHeartbeatQuery, reply: returns<WorkHeartbeat>() },
    stop: { placement: 'owner', sub: WorkId, body: WorkStopInput, reply: returns<Work>() },
    /** Internal (the session kind): the session's live item, queued when it has none (`need: false`: null, nothing queued). */
    queue: { placement: 'owner', body: WorkQueueInput, reply: returns<Work | null>() },
    /** Internal (the session kind): the session's live item stops; null when it has none. */
    'session.stop': { placement: 'owner', body: WorkSessionStopInput, reply: returns<Work | null>() },
    /** Internal (the session kind): whether a sessions token's claim still holds (held, not ended, lapsed or stopped). */
    'claim.live': { placement: 'owner', body: WorkClaimInput, reply: returns<{ live: boolean }>() },
  },
)
