/**
 * JetStream answers "jetstream is not enabled" (no responders) while it elects a leader, right after a
 * server starts or restarts. Those calls are safe to repeat.
 */
export async function retryWhileStarting<T>(what: string, fn: () => Promise<T>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (let delay = 100; ; delay = Math.min(delay * 2, 1000)) {
    try {
      return await fn()
    } catch (err) {
      const msg = String((err as Error)?.message ?? err)
      const transient = /not enabled|no responders|timeout|TIMEOUT|503|leader/i.test(msg)
      if (!transient || Date.now() > deadline) throw new Error(`${what}: ${msg}`, { cause: err })
      await new Promise((r) => setTimeout(r, delay))
    }
  }
}
