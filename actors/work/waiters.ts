/**
 * Polls blocked on an environment's queue, on the host that owns it (every poll of the environment is served there,
 * so an item queued through any host wakes them here): each waits for a wake or its own timeout, and nothing is read
 * again in a loop while none comes.
 */
export class Waiters {
  private readonly byEnv = new Map<string, Set<() => void>>()

  /**
   * A waiter registered now, before the caller looks at the queue, so a wake that comes between its look and its wait
   * is not lost: `wait(ms)` resolves at the first `wake(env)` since `arm`, or after `ms`; `cancel` when not waiting.
   */
  arm(env: string): { wait(ms: number): Promise<void>; cancel(): void } {
    let set = this.byEnv.get(env)
    if (!set) this.byEnv.set(env, (set = new Set()))
    const own = set
    let resolve!: () => void
    const woken = new Promise<void>((r) => {
      resolve = r
    })
    let timer: NodeJS.Timeout | undefined
    const done = () => {
      clearTimeout(timer)
      own.delete(done)
      if (!own.size && this.byEnv.get(env) === own) this.byEnv.delete(env)
      resolve()
    }
    own.add(done)
    return {
      wait: (ms) => {
        if (own.has(done)) timer = setTimeout(done, Math.max(0, ms))
        return woken
      },
      cancel: done,
    }
  }

  wake(env: string): void {
    for (const done of [...(this.byEnv.get(env) ?? [])]) done()
  }

  /** Polls waiting now, over every environment (a gauge for tests and benches). */
  get size(): number {
    let n = 0
    for (const s of this.byEnv.values()) n += s.size
    return n
  }

  close(): void {
    for (const env of [...this.byEnv.keys()]) this.wake(env)
  }
}

/** The window `workers_polling` counts distinct worker ids in (ms). */
export const WORKERS_WINDOW_MS = 30_000

/** Distinct `Anthropic-Worker-ID`s that polled an environment lately, as its owner heard them. */
export class RecentWorkers {
  private readonly byEnv = new Map<string, Map<string, number>>()

  saw(env: string, worker: string, now: number): void {
    let m = this.byEnv.get(env)
    if (!m) this.byEnv.set(env, (m = new Map()))
    m.delete(worker)
    m.set(worker, now)
    // Oldest first (re-inserted on each poll): drop what left the window, so a map never outgrows its pollers.
    for (const [w, at] of m) {
      if (now - at < WORKERS_WINDOW_MS) break
      m.delete(w)
    }
  }

  /** null when no poll named a worker in the window (the client's type: "requires worker_id"). */
  count(env: string, now: number): number | null {
    const m = this.byEnv.get(env)
    if (!m) return null
    let n = 0
    for (const at of m.values()) if (now - at < WORKERS_WINDOW_MS) n++
    return n || null
  }
}
