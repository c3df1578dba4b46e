import type { Queue } from './state.js'

/**
 * One timer per environment on its owner, due when its earliest lease lapses: the lapse is then stored and blocked
 * polls woken, rather than waiting for the next request to notice it. Every op applies lapses anyway, so a timer lost
 * with its host (a takeover) costs only that wake-up.
 */
export class LeaseTimers {
  private readonly timers = new Map<string, { at: number; timer: NodeJS.Timeout }>()
  private closed = false

  constructor(private readonly due: (env: string) => unknown) {}

  arm(env: string, q: Queue): void {
    if (this.closed) return
    let at = Number.POSITIVE_INFINITY
    for (const i of q.items) if (i.lease_until !== null && i.lease_until < at) at = i.lease_until
    const cur = this.timers.get(env)
    if (cur && cur.at === at) return
    if (cur) clearTimeout(cur.timer)
    this.timers.delete(env)
    if (at === Number.POSITIVE_INFINITY) return
    // A few ms late, so the lapse has surely happened by the clock the step reads.
    const timer = setTimeout(
      () => {
        this.timers.delete(env)
        this.due(env)
      },
      Math.max(0, at - Date.now()) + 5,
    )
    timer.unref()
    this.timers.set(env, { at, timer })
  }

  close(): void {
    this.closed = true
    for (const t of this.timers.values()) clearTimeout(t.timer)
    this.timers.clear()
  }
}
