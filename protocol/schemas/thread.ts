import { type } from 'arktype'
import { SESSION_STATUSES } from '../events.js'
import { limitParam, pageParam } from './common.js'
import { listParam } from './events.js'
import { lazy } from './lazy.js'

/** `GET /v1/sessions/{id}/threads` (WIRE §8): paging and a status filter. */
export const ThreadListQuery = lazy(() =>
  type({
    'limit?': limitParam(100),
    'page?': pageParam,
    'statuses?': listParam(type.enumerated(...SESSION_STATUSES)),
  }),
)
export type ThreadListInput = typeof ThreadListQuery.infer

/** `GET /v1/sessions/{id}/threads/{thread_id}/events` (WIRE §8): paging only, oldest first. */
export const ThreadEventsQuery = lazy(() => type({ 'limit?': limitParam(1000), 'page?': pageParam }))
export type ThreadEventsInput = typeof ThreadEventsQuery.infer
