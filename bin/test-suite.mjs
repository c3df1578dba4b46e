// Runs test files as tap's runner would (each file its own node process printing TAP, at most `jobs` at once, a
// timeout per file), but the longest first. tap's runner starts files in alphabetical order, so the slowest ones
// (the cluster and failover scenarios in test/supervisor and test/webhooks) started last and ran on alone at the end
// while the other job slots stood idle. It also puts @tapjs/processinfo (coverage bookkeeping, off here) in front of
// every test process: a loader thread each. Files are ordered by how long each took in the last runs on this
// machine (node_modules/.cache), else in the committed test/timings.json.
import { spawn } from 'node:child_process'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { createInterface } from 'node:readline'

const CACHE = 'node_modules/.cache/troupe-test-times.json'
const COMMITTED = 'test/timings.json'
/**
 * tap inside each process ends it at its timeout, printing what was still running; a file may lengthen its own
 * (`t.setTimeout`). Only a process whose loop is wedged outlives that: it is killed at twice the timeout.
 */
const KILL_AT_TIMEOUTS = 2

const readJson = (file) => {
  try {
    return JSON.parse(readFileSync(file, 'utf8'))
  } catch {
    return {}
  }
}

/**
 * Runs `files` (paths relative to `root`) and reports through `report`: `file(name, { ok, skipped, seconds, lines })`
 * as each ends, in the order they end. Resolves to the summed counts of tap's closing lines.
 * @param {{ root: string, files: string[], jobs: number, timeoutS: number, nodeArgs: string[], report: { file: Function } }} o
 */
export async function runSuite(o) {
  const known = { ...readJson(path.join(o.root, COMMITTED)), ...readJson(path.join(o.root, CACHE)) }
  // A file never timed (new) goes first: it may be long.
  const order = [...o.files].sort((a, b) => (known[b] ?? Number.POSITIVE_INFINITY) - (known[a] ?? Number.POSITIVE_INFINITY) || a.localeCompare(b))
  const totals = { total: 0, pass: 0, fail: 0, files: 0, failedFiles: 0 }
  const times = {}
  let next = 0
  const worker = async () => {
    while (next < order.length) {
      const file = order[next++]
      const r = await runFile(o, file)
      totals.files++
      totals.total += r.counts.total
      totals.pass += r.counts.pass
      totals.fail += r.counts.fail
      if (!r.ok) totals.failedFiles++
      else times[file] = Math.round(r.seconds * 10) / 10
      o.report.file(file, r)
    }
  }
  await Promise.all(Array.from({ length: Math.min(o.jobs, order.length) }, worker))
  try {
    mkdirSync(path.dirname(path.join(o.root, CACHE)), { recursive: true })
    writeFileSync(path.join(o.root, CACHE), JSON.stringify({ ...readJson(path.join(o.root, CACHE)), ...times }, null, 1))
  } catch {}
  return totals
}

/** One file in its own process; TAP_TIMEOUT gives tap inside it the file's timeout, as tap's runner does. */
function runFile(o, file) {
  const started = performance.now()
  const child = spawn(process.execPath, [...o.nodeArgs, file], {
    cwd: o.root,
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, TAP: '1', TAP_TIMEOUT: String(o.timeoutS) },
  })
  const lines = []
  createInterface({ input: child.stdout }).on('line', (l) => lines.push(l))
  const killer = setTimeout(() => child.kill('SIGKILL'), o.timeoutS * 1000 * KILL_AT_TIMEOUTS)
  return new Promise((resolve) => {
    child.on('close', (code, signal) => {
      clearTimeout(killer)
      const seconds = (performance.now() - started) / 1000
      const summary = lines.findLast((l) => /^# \{ total: /.test(l))
      const num = (k) => Number(new RegExp(`${k}: (\\d+)`).exec(summary ?? '')?.[1] ?? 0)
      const counts = { total: num('total'), pass: num('pass'), fail: num('fail') }
      const skipped = lines.some((l) => /^1\.\.0 # /i.test(l))
      // A process that ended badly without counting a failure (a crash, a kill) counts as one.
      const ok = code === 0 && !signal && counts.fail === 0 && (summary !== undefined || skipped)
      if (!ok && counts.fail === 0) counts.fail = 1
      if (!ok && signal) lines.push(`not ok - ${file} ended by ${signal}`)
      resolve({ ok, skipped, seconds, lines, counts, code, signal })
    })
  })
}
