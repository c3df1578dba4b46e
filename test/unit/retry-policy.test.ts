import t from 'tap'
import { casLoop, LOST } from '../../actors/kit/cas.js'
import { casRetry, intervalAfter, modelRetry, retry, retryPolicy, startupRetry, type Clock, type RetryPolicy } from '../../actors/kit/retry-policy.js'
import { ApiError } from '../../protocol/errors/api-error.js'

/** A clock whose sleeps advance it at once and are recorded: sequences are exact, and nothing waits. */
function fakeClock(): Clock & { pauses: number[]; at: () => number } {
  let now = 1_000_000
  const pauses: number[] = []
  return {
    pauses,
    at: () => now,
    now: () => now,
    sleep: async (ms) => {
      pauses.push(ms)
      now += ms
    },
  }
}

class Flaky extends Error {}
const always = (err: unknown) => err instanceof Flaky

/** `fn` that fails with Flaky `failures` times, then answers 'ok'; counts its calls. */
function failing(failures: number) {
  const calls: number[] = []
  const fn = async (attempt: number) => {
    calls.push(attempt)
    if (calls.length <= failures) throw new Flaky(`failure ${calls.length}`)
    return 'ok'
  }
  return { fn, calls }
}

t.test("defaults are Temporal's; the named policies keep the timings they replaced", async (t) => {
  t.same(retryPolicy(), { initialIntervalMs: 1000, backoffCoefficient: 2, maximumIntervalMs: 100_000, maximumAttempts: 0 })
  t.same(retryPolicy({ initialIntervalMs: 10 }).maximumIntervalMs, 1000, 'the cap follows the first interval')
  t.same(startupRetry, { initialIntervalMs: 100, backoffCoefficient: 2, maximumIntervalMs: 1000, maximumAttempts: 0 })
  t.same(casRetry, { initialIntervalMs: 0, backoffCoefficient: 2, maximumIntervalMs: 0, maximumAttempts: 20 })
  t.same(modelRetry, { initialIntervalMs: 1000, backoffCoefficient: 2, maximumIntervalMs: 30_000, maximumAttempts: 5 })
  t.same(
    [1, 2, 3, 4, 5, 6].map((n) => intervalAfter(startupRetry, n)),
    [100, 200, 400, 800, 1000, 1000],
  )
  t.same(
    [1, 2, 3, 4, 5, 6].map((n) => intervalAfter(modelRetry, n)),
    [1000, 2000, 4000, 8000, 16_000, 30_000],
  )
})

t.test('backoff: each pause is the last one times the coefficient, capped', async (t) => {
  const clock = fakeClock()
  const policy: RetryPolicy = { initialIntervalMs: 5, backoffCoefficient: 3, maximumIntervalMs: 100, maximumAttempts: 0 }
  const { fn, calls } = failing(5)
  const seen: Array<[number, number]> = []
  t.equal(await retry(policy, fn, { retryable: always, clock, onRetry: (_e, n, pause) => seen.push([n, pause]) }), 'ok')
  t.same(clock.pauses, [5, 15, 45, 100, 100])
  t.same(calls, [1, 2, 3, 4, 5, 6], 'attempts are numbered from 1')
  t.same(
    seen,
    [
      [1, 5],
      [2, 15],
      [3, 45],
      [4, 100],
      [5, 100],
    ],
    'onRetry before each pause',
  )
})

t.test('maximumAttempts bounds the attempts, the first included; the last failure is thrown as it was', async (t) => {
  const clock = fakeClock()
  const { fn, calls } = failing(100)
  const err = await retry({ ...casRetry, maximumAttempts: 4 }, fn, { retryable: always, clock }).catch((e) => e)
  t.equal(calls.length, 4)
  t.type(err, Flaky)
  t.equal(err.message, 'failure 4')
  t.same(clock.pauses, [], 'an interval of 0 takes no timer turn')
})

t.test('a failure that is not retryable is thrown at once', async (t) => {
  const clock = fakeClock()
  let calls = 0
  const boom = new Error('refused')
  const err = await retry(
    startupRetry,
    async () => {
      calls++
      throw boom
    },
    { retryable: always, clock },
  ).catch((e) => e)
  t.equal(err, boom)
  t.equal(calls, 1)
})

t.test('deadline: no attempt starts after it; the pause that would cross it ends at it', async (t) => {
  const clock = fakeClock()
  const start = clock.at()
  const starts: number[] = []
  const err = await retry(
    { initialIntervalMs: 10, backoffCoefficient: 2, maximumIntervalMs: 1000, maximumAttempts: 0, deadlineMs: 55 },
    async () => {
      starts.push(clock.at() - start)
      throw new Flaky('down')
    },
    { retryable: always, clock },
  ).catch((e) => e)
  t.type(err, Flaky)
  t.same(clock.pauses, [10, 20, 25], '10, 20, then 40 cut to the 25 ms left')
  t.same(starts, [0, 10, 30, 55], 'the last attempt starts at the deadline, and its failure is final')
})

t.test("the deadline counts the attempts' own time", async (t) => {
  const clock = fakeClock()
  let calls = 0
  const err = await retry(
    { ...startupRetry, deadlineMs: 1000 },
    async () => {
      calls++
      await clock.sleep(600) // a slow attempt (a request timing out)
      throw new Flaky('timeout')
    },
    { retryable: always, clock },
  ).catch((e) => e)
  t.type(err, Flaky)
  t.equal(calls, 2, 'a first attempt of 600 ms and a pause of 100: the second fails past the deadline')
})

t.test('real timers, small intervals: a bounded policy ends', async (t) => {
  const { fn, calls } = failing(100)
  const err = await retry({ initialIntervalMs: 1, backoffCoefficient: 2, maximumIntervalMs: 4, maximumAttempts: 5 }, fn, { retryable: always }).catch((e) => e)
  t.type(err, Flaky)
  t.equal(calls.length, 5)
  t.equal(await retry(retryPolicy({ initialIntervalMs: 1 }), failing(2).fn, { retryable: always }), 'ok')
})

t.test("casLoop: LOST retries under casRetry; past the bound it is the catalog's 503, never a 500", async (t) => {
  let attempts = 0
  t.equal(await casLoop(async () => (++attempts < 3 ? LOST : 'written')), 'written')
  t.equal(attempts, 3)

  attempts = 0
  const err = await casLoop(async () => {
    attempts++
    return LOST
  }).catch((e) => e)
  t.equal(attempts, casRetry.maximumAttempts)
  t.type(err, ApiError)
  t.match(err, { status: 503, type: 'overloaded_error', reason: 'contention', code: undefined, retryAfterMs: 500 })

  // A refusal inside an attempt is thrown as it is, at once; so is a nested loop's contention (it used its attempts).
  attempts = 0
  const refusal = new Error('archived')
  t.equal(
    await casLoop(async () => {
      attempts++
      throw refusal
    }).catch((e) => e),
    refusal,
  )
  t.equal(attempts, 1)
  attempts = 0
  const nested = await casLoop(async () => {
    attempts++
    return casLoop(async () => LOST, { ...casRetry, maximumAttempts: 2 })
  }).catch((e) => e)
  t.equal(attempts, 1)
  t.match(nested, { status: 503, reason: 'contention' })
})
