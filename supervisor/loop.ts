import { performance } from 'node:perf_hooks'

/**
 * A timer-driven async loop that never overlaps itself: the next pass is scheduled only when the previous
 * one has settled, so a slow pass (a stalled store, a busy event loop) delays the next instead of racing it.
 * A failure is reported once per run of passes failing the same way (the same message), not at every pass: a
 * store that is gone for a minute is one line, not one per beat.
 */
export interface Loop {
  /** Stops scheduling and waits for a pass in progress to settle. */
  stop(): Promise<void>
}

export function every(ms: number, pass: () => Promise<void>, onError: (err: unknown) => void): Loop {
  let stopped = false
  let timer: NodeJS.Timeout | undefined
  let running: Promise<void> = Promise.resolve()
  let failing: string | undefined
  const run = (): Promise<void> => {
    clearTimeout(timer)
    let began = 0
    running = running
      .then(async () => {
        if (stopped) return
        began = performance.now()
        try {
          await pass()
          failing = undefined
        } catch (err) {
          const message = err instanceof Error ? err.message : String(err)
          if (message !== failing) onError(err)
          failing = message
        }
      })
      .then(() => {
        // The cadence counts from the start of a pass: a slow pass is followed at once, never overlapped.
        if (!stopped) timer = setTimeout(run, Math.max(0, ms - (performance.now() - began)))
      })
    return running
  }
  void run()
  return {
    async stop() {
      stopped = true
      clearTimeout(timer)
      await running
    },
  }
}
