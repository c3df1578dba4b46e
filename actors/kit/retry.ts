import { isTransientNatsError } from './nats-errors.js'

/**
 * JetStream refuses calls while it starts or elects a leader (right after a server starts or restarts, or while a
 * cluster forms): no responders, timeouts, "temporarily unavailable". Those calls are safe to repeat, until the
 * deadline; anything else fails at once. The error names `what` and keeps NATS's error as its cause.
 */
export async function retryWhileStarting<T>(what: string, fn: () => Promise<T>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (let delay = 100; ; delay = Math.min(delay * 2, 1000)) {
    try {
      return await fn()
    } catch (err) {
      const msg = String((err as Error)?.message ?? err)
      if (!isTransientNatsError(err) || Date.now() > deadline) throw new Error(`${what}: ${msg}`, { cause: err })
      await new Promise((r) => setTimeout(r, delay))
    }
  }
}
