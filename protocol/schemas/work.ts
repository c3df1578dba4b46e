import { type } from 'arktype'
import { limitParam, notArray, pageParam } from './common.js'
import { lazy } from './lazy.js'

/** A work item's lifecycle (WIRE §5): queued → starting (acked) → active (first beat) → stopping → stopped. */
export type WorkState = 'queued' | 'starting' | 'active' | 'stopping' | 'stopped'

/** A work item as the API shows it (the official client's BetaSelfHostedWork). */
export interface Work {
  id: string
  type: 'work'
  environment_id: string
  data: { type: 'session'; id: string }
  state: WorkState
  metadata: Record<string, string>
  /** Only on a poll's answer: base64url JSON `{sessions_token}` (protocol/sessions-token.ts). */
  secret: string | null
  created_at: string
  acknowledged_at: string | null
  started_at: string | null
  latest_heartbeat_at: string | null
  stop_requested_at: string | null
  stopped_at: string | null
}

/** A lease as the server holds it: a heartbeat's answer, and a 412's `details.current_state`. */
export interface WorkLease {
  last_heartbeat: string | null
  lease_extended: boolean
  state: WorkState
  ttl_seconds: number
}

export interface WorkHeartbeat extends Omit<WorkLease, 'last_heartbeat'> {
  type: 'work_heartbeat'
  /** The value the next beat must send as `expected_last_heartbeat`; '' when none is stored. */
  last_heartbeat: string
}

export interface WorkQueueStats {
  type: 'work_queue_stats'
  depth: number
  pending: number
  oldest_queued_at: string | null
  workers_polling: number | null
}

/** Bounds of a lease's TTL (seconds): `desired_ttl_seconds` is clamped to them; the default when none is asked. */
export const WORK_TTL = { min: 2, max: 600, default: 60 } as const

/** How long a handed-out item stays pending before another poll may take it, unless the poll says (ms). */
export const RECLAIM_DEFAULT_MS = 5000

/** The literal that claims a lease nobody holds (the client's `NO_HEARTBEAT_SENTINEL`). */
export const NO_HEARTBEAT = 'NO_HEARTBEAT'

/** `block_ms` 1–999 (omitted: answer at once); `reclaim_older_than_ms` 0 up to an hour. */
export const WorkPollQuery = lazy(() =>
  type({
    'block_ms?': type('string.integer.parse').pipe(type('1 <= number <= 999')),
    'reclaim_older_than_ms?': type('string.integer.parse').pipe(type('0 <= number <= 3600000')),
  }),
)

/** `desired_ttl_seconds` any integer (clamped to WORK_TTL); `expected_last_heartbeat` at most 64 characters. */
export const WorkHeartbeatQuery = lazy(() =>
  type({
    'desired_ttl_seconds?': type('string.integer.parse').pipe(type('-1000000000 <= number <= 1000000000')),
    'expected_last_heartbeat?': 'string <= 64',
  }),
)

export const WorkStopInput = lazy(() => type({ '+': 'reject', 'force?': 'boolean' }))

/** The patch is checked by the op (`invalid_metadata`, the code the client maps), not as a shape error. */
export const WorkUpdateInput = lazy(() => type({ '+': 'reject', metadata: type('object').narrow(notArray) }))

export const WorkListQuery = lazy(() => type({ 'limit?': limitParam(100), 'page?': pageParam }))

/**
 * Internal (the session kind): the session's live item, queued when it has none. `need`: its turn parked on tools
 * (true: a worker must come even if the live item's worker is leaving) or ended without any (false: no longer).
 */
export const WorkQueueInput = lazy(() => type({ '+': 'reject', session_id: 'string <= 128', 'need?': 'boolean' }))

/** Internal (the session kind): the session's live item stops (`force`: at once). */
export const WorkSessionStopInput = lazy(() => type({ '+': 'reject', session_id: 'string <= 128', force: 'boolean' }))

/** Internal (the session kind): whether claim `claim` of item `work_id` still holds (a sessions token's life). */
export const WorkClaimInput = lazy(() => type({ '+': 'reject', work_id: 'string <= 128', claim: 'number.integer >= 0' }))

export type WorkPollInput = typeof WorkPollQuery.infer
export type WorkHeartbeatInput = typeof WorkHeartbeatQuery.infer
