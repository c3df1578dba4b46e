// A supervisor's stop-then-kill (issue 21, point 1): SIGTERM to `npm start`'s process group, SIGKILL 50 ms later
// (npm may exit before node has stopped), then a start at once, 20 times in a row (test/helpers/crash-loop.ts).
import t from 'tap'
import '../helpers/keepalive.js'
import { crashDir, crashLoop } from '../helpers/crash-loop.js'

// 20 starts of `npm start` took over 300 s in CI, beside the other slow files.
t.setTimeout(600_000)

t.test('SIGTERM to the process group, SIGKILL 50 ms later, then a start at once: 20 times in a row', async (t) => {
  await crashLoop(t, crashDir(t), async (p) => {
    p.signal('SIGTERM')
    await new Promise((r) => setTimeout(r, 50))
    await p.kill()
  })
})
