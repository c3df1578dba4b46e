import { ApiError } from '../../protocol/errors/api-error.js'
import { retry, retryPolicy } from '../kit/index.js'

/** A vault's owner answering 503 for a moment (its partition moving) is asked again, for up to 3 s. */
const ASK_AGAIN = retryPolicy({ initialIntervalMs: 200, maximumIntervalMs: 1000, maximumAttempts: 5, deadlineMs: 3000 })

/** `call`, asked again while the vault's owner answers 503 (a hand-over, a moment's store trouble). */
export const askOwner = <T>(call: () => Promise<T>): Promise<T> => retry(ASK_AGAIN, call, { retryable: (err) => err instanceof ApiError && err.status === 503 })
