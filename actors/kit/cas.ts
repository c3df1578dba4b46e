import { fail } from '../../protocol/errors/fail.js'
import { casRetry, retry, type RetryPolicy } from './retry-policy.js'

/** What an attempt of `casLoop` returns when its compare-and-set lost to another writer. */
export const LOST: unique symbol = Symbol('compare-and-set lost')

/** Private to the loop: a contention error from a nested loop has used its own attempts already and is not retried. */
class Lost extends Error {}

/**
 * Runs `attempt` (read, decide, compare-and-set) again while it returns LOST, under `policy` (default `casRetry`).
 * Contention past the bound is the catalog's 503 `contention`, which clients retry: never a 500.
 */
export async function casLoop<T>(attempt: () => Promise<T | typeof LOST>, policy: RetryPolicy = casRetry): Promise<T> {
  try {
    return await retry(
      policy,
      async () => {
        const r = await attempt()
        if (r === LOST) throw new Lost()
        return r
      },
      { retryable: (err) => err instanceof Lost },
    )
  } catch (err) {
    throw err instanceof Lost ? fail('contention') : err
  }
}
