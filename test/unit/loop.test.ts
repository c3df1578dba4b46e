import t from 'tap'
import { every } from '../../supervisor/loop.js'
import { until } from '../helpers/wait.js'

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
