// A crashed server restarts at once (issue 21, point 1): SIGKILL of `npm start`'s process group, then a start at
// once, 20 times in a row (test/helpers/crash-loop.ts); a live holder is still refused; racing starts, one wins.
// SIGTERM then SIGKILL: stop-kill-restart.test.ts.
import t from 'tap'
import '../helpers/keepalive.js'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { crashDir, crashLoop, startSupervised } from '../helpers/crash-loop.js'

// 20 starts of `npm start` took over 300 s in CI, beside the other slow files.
t.setTimeout(600_000)

t.test('SIGKILL of the process group, then a start at once: 20 times in a row', async (t) => {
  const dir = crashDir(t)
  await crashLoop(t, dir, (p) => p.kill())

  // A live holder is still refused, and named.
  const live = await startSupervised(t, dir)
  const holder = JSON.parse(readFileSync(path.join(dir, 'troupe.lock'), 'utf8'))
  const err = await startSupervised(t, dir).then(
    () => undefined,
    (e: Error) => e,
  )
  t.match(err?.message, new RegExp(`the data directory ${dir} is in use by troupe start \\(pid ${holder.pid}, since `))
  t.not(holder.pid, live.proc.pid, 'the holder named is node, not npm')
  await live.kill()
})

t.test('two starts racing for a directory just freed by a SIGKILL: exactly one wins', async (t) => {
  const dir = crashDir(t)
  await (await startSupervised(t, dir)).kill()
  const results = await Promise.allSettled([startSupervised(t, dir), startSupervised(t, dir)])
  const won = results.filter((r) => r.status === 'fulfilled')
  const lost = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected')
  t.equal(won.length, 1, 'one start wins')
  t.equal(lost.length, 1, 'the other is refused')
  t.match(lost[0]?.reason?.message, /is in use by troupe start \(pid \d+/)
  for (const r of won) await r.value.kill()
})
