import { spawn } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import type { StatusReport } from '../../supervisor/inspect/status/index.js'
import { stack } from '../helpers/stack.js'
import { asUserRuns } from '../helpers/troupe.js'

// `troupe status` sums the live hosts' /metrics: each host's figures, and the cluster's.

const BIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../bin/troupe.mjs')
const s = await stack()

function status(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const env = { ...process.env, NATS_URL: s.nats.url } as NodeJS.ProcessEnv
  const [cmd, ...argv] = asUserRuns([process.execPath, BIN, 'status', ...args], env)
  const proc = spawn(cmd!, argv, { env, stdio: ['ignore', 'pipe', 'pipe'] })
  t.teardown(() => void (proc.exitCode === null && proc.signalCode === null && proc.kill('SIGKILL')))
  let stdout = ''
  let stderr = ''
  proc.stdout.on('data', (d) => (stdout += d))
  proc.stderr.on('data', (d) => (stderr += d))
  return new Promise((resolve) => proc.once('close', (code) => resolve({ code, stdout, stderr })))
}

t.test("each live host's metrics and the cluster's sums", async (t) => {
  for (let i = 0; i < 3; i++) await s.client.beta.agents.create({ name: `a${i}`, model: 'claude-sonnet-4-5' })
  const r = await status(['--json'])
  t.equal(r.code, 0, r.stderr)
  const report: StatusReport = JSON.parse(r.stdout)
  t.equal(report.metrics.hosts.length, 1)
  const [host] = report.metrics.hosts
  t.equal(host?.error, undefined)
  t.equal(host?.url, s.url)
  t.ok(host!.requests >= 3, 'the creates were counted')
  t.equal(report.metrics.totals.requests, host!.requests)
  const text = await status([])
  t.match(text.stdout, /^metrics \(each live host’s \/metrics, since it started\):$/m)
  t.match(text.stdout, /^ {2}cluster \(1 of 1 answered\) {2}requests \d+/m)
})
