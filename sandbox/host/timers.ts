// setTimeout overflows above 2^31-1 ms and fires at once; clamp so huge timeouts mean "very long".
export const MAX_TIMER_MS = 2 ** 31 - 1

/** Resolves with `p`'s value, or `undefined` after `ms`; the timer never outlives the race. */
export async function within<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<undefined>((resolve) => {
    timer = setTimeout(resolve, Math.min(ms, MAX_TIMER_MS), undefined)
  })
  try {
    return await Promise.race([p, timeout])
  } finally {
    clearTimeout(timer)
  }
}
