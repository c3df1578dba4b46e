import { isApiError } from '../../protocol/errors/api-error.js'
import { fail } from '../../protocol/errors/fail.js'
import { isTransientNatsError } from '../kit/index.js'

/** A 404 from the kind asked: what it names does not exist (any more). */
export const isMissing = (err: unknown): boolean => isApiError(err) && err.status === 404

/** A failure that says nothing of the outcome yet: the store or another kind's owner was away for a moment. */
export const isTransient = (err: unknown): boolean => (isApiError(err) ? err.status === 503 || err.status === 504 : isTransientNatsError(err))

/**
 * What a step makes of a failure: a moment's (the store, a failover) stops the actor as the store being away, so the
 * kit rebuilds it and steps again without counting it towards giving the work up; anything else as it is.
 */
export function rethrow(err: unknown): never {
  if (isTransient(err)) throw fail('store_unavailable')
  throw err
}
