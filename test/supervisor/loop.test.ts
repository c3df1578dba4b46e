import t from 'tap'
import { every } from '../../actors/kit/loop.js'
import { until } from '../helpers/wait.js'

// Placement wakes its pass when a host is due to be looked at, instead of waiting for the timer's next turn.

t.test('wake runs a pass at once between passes, far ahead of the timer', async (t) => {
  let passes = 0
  const loop = every(
    60_000,
    async () => {
      passes++
    },
    () => undefined,
  )
  t.teardown(() => loop.stop())
  await until('the first pass', () => passes === 1, 5_000)
  loop.wake()
  await until('the woken pass', () => passes === 2, 5_000)
  t.pass('a pass 60 s early')
})

t.test('wake during a pass: one more pass right after it, never overlapping', async (t) => {
  let passes = 0
  let running = 0
  let overlapped = false
  let release: () => void = () => undefined
  const loop = every(
    60_000,
    async () => {
      passes++
      running++
      if (running > 1) overlapped = true
      if (passes === 1) await new Promise<void>((r) => (release = r))
      running--
    },
    () => undefined,
  )
  t.teardown(() => loop.stop())
  await until('the first pass is running', () => passes === 1, 5_000)
  loop.wake()
  loop.wake()
  t.equal(passes, 1, 'not while the pass runs')
  release()
  await until('the pass that was asked for', () => passes === 2, 5_000)
  await new Promise((r) => setTimeout(r, 100))
  t.equal(passes, 2, 'two wakes during one pass ask for one more pass')
  t.notOk(overlapped, 'never two passes at once')
})

t.test('stop: no pass after it, and wake does nothing', async (t) => {
  let passes = 0
  const loop = every(
    10,
    async () => {
      passes++
    },
    () => undefined,
  )
  await until('a pass', () => passes > 0, 5_000)
  await loop.stop()
  const at = passes
  loop.wake()
  await new Promise((r) => setTimeout(r, 100))
  t.equal(passes, at)
})

// A failing timer loop reports a failure once per run of passes failing the same way: a store gone for a minute
// is one log line, not one per beat. A new failure, or the same one after a success, is reported again.

t.test('one report per run of the same failure', async (t) => {
  const script = ['gone', 'gone', 'gone', 'ok', 'gone', 'other', 'other']
  let pass = 0
  const reported: string[] = []
  const loop = every(
    1,
    async () => {
      const step = script[Math.min(pass++, script.length - 1)]
      if (step !== 'ok') throw new Error(step)
    },
    (err) => reported.push((err as Error).message),
  )
  await until('the script has run', () => pass > script.length + 3)
  await loop.stop()
  t.same(reported, ['gone', 'gone', 'other'])
})
