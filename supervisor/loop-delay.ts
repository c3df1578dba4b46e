import { monitorEventLoopDelay } from 'node:perf_hooks'

export interface LoopDelay {
  /** The longest delay since the last take, in ms. */
  take(): number
  stop(): void
}

/**
 * Watches the event loop's delay: a heartbeat that lapsed while the loop was held (a long synchronous step) is this
 * process's doing, one that lapsed with the loop free is the store's. Sampled every 100 ms on libuv's own timer (an idle server's CPU counts every wake-up).
 */
export function loopDelayWatch(): LoopDelay {
  const h = monitorEventLoopDelay({ resolution: 100 })
  h.enable()
  return {
    take() {
      const max = Math.round(h.max / 1e6)
      h.reset()
      return max
    },
    stop: () => h.disable(),
  }
}
