/**
 * How an operation is attempted again after a failure (Temporal's RetryPolicy is the model): the pause after the n-th
 * failure is `initialIntervalMs × backoffCoefficient^(n−1)`, capped at `maximumIntervalMs`, until `maximumAttempts` or
 * `deadlineMs` runs out. Which failures are worth another attempt is the caller's to say (`retry`'s `retryable`).
 */
export interface RetryPolicy {
  /** The pause after the first failure, in ms; 0 retries at once. Default 1000. */
  initialIntervalMs: number
  /** Each pause is the one before times this. Default 2. */
  backoffCoefficient: number
  /** No pause is longer than this, in ms. Default 100 × initialIntervalMs. */
  maximumIntervalMs: number
  /** Attempts in all, the first included; 0 is no bound (give a deadline then). Default 0. */
  maximumAttempts: number
  /**
   * Ms from the start of the first attempt after which no attempt starts: a pause that would pass it ends at it, and a
   * failure after it is final. Default none.
   */
  deadlineMs?: number
}

/** A policy from the defaults above, with `overrides`. */
export function retryPolicy(overrides: Partial<RetryPolicy> = {}): RetryPolicy {
  const initialIntervalMs = overrides.initialIntervalMs ?? 1000
  return { initialIntervalMs, backoffCoefficient: 2, maximumIntervalMs: 100 * initialIntervalMs, maximumAttempts: 0, ...overrides }
}

/**
 * JetStream starting or electing a leader (a server that has just started, a cluster forming, a node just lost):
 * 100 ms, doubling up to 1 s, with no deadline: start-up waits out what the cluster gets over, saying so
 * (kit/retry.ts), and only a refusal (a misconfiguration) ends it. A caller that must give up sets its own.
 */
export const startupRetry = retryPolicy({ initialIntervalMs: 100, maximumIntervalMs: 1000 })

/**
 * A compare-and-set that lost to another writer: read again and retry at once (the winner is done, so there is
 * nothing to wait for), 20 attempts. Past that the caller answers the catalog's 503 `contention`.
 */
export const casRetry = retryPolicy({ initialIntervalMs: 0, maximumIntervalMs: 0, maximumAttempts: 20 })

/**
 * A model request that failed retryably (overloaded, rate limited, a 5xx, a lost connection): 1 s, doubling up to
 * 30 s, 5 attempts (4 retries). A provider's `retry-after` replaces the pause. TROUPE_MODEL_RETRIES and
 * TROUPE_MODEL_RETRY_BASE_MS override the attempts and the first pause.
 */
export const modelRetry = retryPolicy({ initialIntervalMs: 1000, maximumIntervalMs: 30_000, maximumAttempts: 5 })

/**
 * Rebuilding an actor that failed, or listing a partition's work after a takeover, while the store cannot answer:
 * at once the first time, then 500 ms doubling up to 5 s, for as long as the partition is served here (a NATS
 * election takes up to about 15 s, and the actor must not wait much longer than the outage lasted).
 */
export const rebuildRetry = retryPolicy({ initialIntervalMs: 500, maximumIntervalMs: 5000 })

/**
 * Saving or restoring a session's workspace while the store cannot answer (actors/workdir/workspace/sync.ts): 200 ms
 * doubling up to 2 s, for 30 s, about a NATS election and more; the tool's result waits meanwhile.
 */
export const workspaceRetry = retryPolicy({ initialIntervalMs: 200, maximumIntervalMs: 2000, deadlineMs: 30_000 })

/**
 * A webhook delivery attempt that failed (SPEC webhooks, delivery rule 3): 3 attempts in all; the pause after the
 * n-th failure is 10 s × 4^(n−1) (10 s, then 40 s) with jitter (`jitteredAfter`), kept within 5–120 s. The rule's
 * bounds, not the policy's, are what a delivery may wait: WEBHOOK_PAUSE_MS.
 */
export const webhookRetry = retryPolicy({ initialIntervalMs: 10_000, backoffCoefficient: 4, maximumIntervalMs: 120_000, maximumAttempts: 3 })
export const WEBHOOK_PAUSE_MS = { min: 5_000, max: 120_000 } as const

/**
 * `intervalAfter` with ±50% jitter (so the attempts of many deliveries that failed together spread out), kept within
 * `bounds`. `random` is in [0, 1): Math.random, or a test's.
 */
export function jitteredAfter(policy: RetryPolicy, failures: number, bounds: { min: number; max: number }, random: () => number = Math.random): number {
  const ms = intervalAfter(policy, failures) * (0.5 + random())
  return Math.round(Math.min(bounds.max, Math.max(bounds.min, ms)))
}

/** The pause after the `failures`-th failure (1 for the first), before any deadline shortens it. */
export function intervalAfter(policy: RetryPolicy, failures: number): number {
  const ms = policy.initialIntervalMs * policy.backoffCoefficient ** (failures - 1)
  return Math.min(policy.maximumIntervalMs, ms)
}

export interface RetryOptions {
  /** Whether a failure is worth another attempt; any other failure is thrown at once. */
  retryable(err: unknown): boolean
  /** Called before each pause, with the failure, the attempts made so far and the pause. Default none. */
  onRetry?(err: unknown, attempts: number, pauseMs: number): void
  /** Time, for tests. Default the real clock and timers. */
  clock?: Clock
}

export interface Clock {
  now(): number
  sleep(ms: number): Promise<void>
}

const realClock: Clock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
}

/**
 * Runs `fn` (given the attempt number, 1 for the first) until it succeeds, a failure is not retryable, or the policy
 * runs out; then the last failure is thrown as it was.
 */
export async function retry<T>(policy: RetryPolicy, fn: (attempt: number) => Promise<T>, opts: RetryOptions): Promise<T> {
  const clock = opts.clock ?? realClock
  const start = clock.now()
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn(attempt)
    } catch (err) {
      if (!opts.retryable(err)) throw err
      if (policy.maximumAttempts > 0 && attempt >= policy.maximumAttempts) throw err
      let pause = intervalAfter(policy, attempt)
      if (policy.deadlineMs !== undefined) {
        const left = start + policy.deadlineMs - clock.now()
        if (left <= 0) throw err
        pause = Math.min(pause, left)
      }
      opts.onRetry?.(err, attempt, pause)
      // No timer turn for a pause of 0: a lost compare-and-set is retried in the same breath, as it always was.
      if (pause > 0) await clock.sleep(pause)
    }
  }
}
