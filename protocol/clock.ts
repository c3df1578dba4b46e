/**
 * Time as schedules see it, in epoch ms: the system clock, or a test's (`TROUPE_SCHEDULE_CLOCK`). `rate` is how many
 * of its milliseconds pass per real one (default 1), so a timer can wait for one of its instants in real time.
 */
export interface Clock {
  (): number
  readonly rate?: number
}

export const systemClock: Clock = () => Date.now()

/** Real milliseconds until the clock reads `at` (0 when it is past). */
export const realMsUntil = (clock: Clock, at: number): number => Math.max(0, (at - clock()) / (clock.rate ?? 1))

/**
 * A clock for tests and benchmarks of schedules, so none waits real minutes: `start=<RFC 3339>,rate=<n>,since=<epoch
 * ms>` reads `start` at the real instant `since` and runs `rate` times as fast from there (rate default 1, since default
 * now). Every process of a test gets the same value, so all agree on the time. Throws a message naming what is wrong.
 */
export function parseClock(spec: string, real: Clock = systemClock): Clock {
  const parts = new Map<string, string>()
  for (const kv of spec.split(',')) {
    const i = kv.indexOf('=')
    if (i < 0) throw new Error(`expected key=value pairs (start, rate, since), not ${JSON.stringify(kv)}`)
    parts.set(kv.slice(0, i).trim(), kv.slice(i + 1).trim())
  }
  const unknown = [...parts.keys()].find((k) => k !== 'start' && k !== 'rate' && k !== 'since')
  if (unknown !== undefined) throw new Error(`unknown key ${JSON.stringify(unknown)} (start, rate, since)`)
  const start = Date.parse(parts.get('start') ?? '')
  if (!Number.isFinite(start)) throw new Error('start must be an RFC 3339 time')
  const rate = Number(parts.get('rate') ?? 1)
  if (!Number.isFinite(rate) || rate <= 0 || rate > 10_000) throw new Error('rate must be a number above 0, at most 10000')
  const since = Number(parts.get('since') ?? real())
  if (!Number.isSafeInteger(since) || since < 0) throw new Error('since must be an epoch time in milliseconds')
  return Object.assign(() => Math.floor(start + (real() - since) * rate), { rate })
}
