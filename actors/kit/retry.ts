import { isTransientNatsError } from './nats-errors.js'
import { retry, startupRetry } from './retry-policy.js'

/**
 * JetStream refuses calls while it starts or elects a leader (right after a server starts or restarts, or while a
 * cluster forms): no responders, timeouts, "temporarily unavailable". Those calls are repeated under `startupRetry`,
 * until `timeoutMs` (default its deadline, 30 s); anything else fails at once. The error names `what` and keeps NATS's
 * error as its cause.
 */
export async function retryWhileStarting<T>(what: string, fn: () => Promise<T>, timeoutMs = startupRetry.deadlineMs): Promise<T> {
  try {
    return await retry({ ...startupRetry, deadlineMs: timeoutMs }, fn, { retryable: isTransientNatsError })
  } catch (err) {
    throw new Error(`${what}: ${String((err as Error)?.message ?? err)}`, { cause: err })
  }
}
