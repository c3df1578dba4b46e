import t from 'tap'
import { spawn, spawnSync } from 'node:child_process'
import { procOf } from '../helpers/procs.js'
import { until } from '../helpers/wait.js'

// A test process SIGKILLed (as tap ends one past its timeout) runs no exit handler: what it started must still go.
const CHILD = `
import { spawn } from 'node:child_process'
import { reapOnExit } from './test/helpers/reaper.ts'
const kept = spawn('sleep', ['600'], { stdio: 'ignore', detached: true })
const grouped = spawn('sleep', ['600'], { stdio: 'ignore', detached: true })
const forgotten = spawn('sleep', ['600'], { stdio: 'ignore', detached: true })
reapOnExit(kept.pid)
reapOnExit(-grouped.pid)
reapOnExit(forgotten.pid).forget()
console.log(JSON.stringify([kept.pid, grouped.pid, forgotten.pid]))
setInterval(() => {}, 1000)
`

t.test('a SIGKILLed test process takes the processes it listed with it, not those it forgot', async (t) => {
  const child = spawn(process.execPath, ['--import=tsx', '--input-type=module', '-e', CHILD], { stdio: ['ignore', 'pipe', 'inherit'] })
  let out = ''
  child.stdout!.on('data', (d) => (out += d))
  const pids = await until('the pids', () => (out.includes('\n') ? (JSON.parse(out) as number[]) : undefined), 20_000, 20)
  t.teardown(() => {
    for (const p of pids) spawnSync('kill', ['-KILL', String(p)])
  })
  for (const p of pids) t.ok(procOf(p), `${p} runs`)
  child.kill('SIGKILL')
  await until('the listed ones gone', () => procOf(pids[0]!) === undefined && procOf(pids[1]!) === undefined, 10_000, 20)
  t.ok(procOf(pids[2]!), 'the forgotten one runs on')
})
