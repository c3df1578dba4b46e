// `npm run bench -- deployments`: 10,000 deployments scheduled every minute (BENCH_DEPLOYMENTS), on the system clock.
// The deployments live on one `troupe serve` (default log level, stderr to a file, as under a supervisor); one
// `troupe orchestrate` fires them, then two. For each occurrence measured: the firing delay, from the occurrence to its
// claim marked done (the fire answered: the run's intent stored), as the claims bucket stamps it, p50 and p99; and the
// CPU the orchestrators spent (utime + stime from /proc) per occurrence fired. Runs create their sessions meanwhile
// on the serve host (its CPU is printed too): that is the load a real schedule puts there.
import { readFileSync, mkdtempSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Kvm } from '@nats-io/kv'
import { connect } from '@nats-io/transport-node'
import { decode } from '../../protocol/codec.js'
import { Buckets } from '../../protocol/subjects.js'
import { type ClaimValue, parseClaimKey } from '../../actors/deployment/scheduler/claims.js'
import { startNats } from '../helpers/nats.js'
import { clientFor, startTroupe, type TroupeProcess } from '../helpers/troupe.js'
import { sleep } from './bed.js'

const N = Number(process.env.BENCH_DEPLOYMENTS ?? 10_000)
const MINUTES = Number(process.env.BENCH_MINUTES ?? 2)
const MIN = 60_000

/** CPU ms a process has used (user + system), from /proc. */
function cpuMs(p: TroupeProcess): number {
  const fields = readFileSync(`/proc/${p.proc.pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100
}

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))] ?? Number.NaN

export async function runDeploymentBench(): Promise<void> {
  const nats = await startNats()
  const dir = mkdtempSync(path.join(os.tmpdir(), 'troupe-bench-deploy-'))
  const procs: TroupeProcess[] = []
  const start = async (role: 'serve' | 'orchestrate', name: string) => {
    const p = await startTroupe({ role, natsUrl: nats.url, stderrFile: path.join(dir, `${name}.log`), env: { LOG_LEVEL: '' } })
    procs.push(p)
    return p
  }
  try {
    const serve = await start('serve', 'serve')
    const client = clientFor(serve.url, { maxRetries: 5 })
    const agent = await client.beta.agents.create({ name: 'bench', model: 'claude-sonnet-4-5' })
    const env = await client.beta.environments.create({ name: 'bench' })
    const t0 = Date.now()
    let made = 0
    const body = {
      name: 'bench',
      agent: agent.id,
      environment_id: env.id,
      initial_events: [{ type: 'user.message', content: [{ type: 'text', text: 'tick' }] }],
      schedule: { type: 'cron', expression: '* * * * *', timezone: 'UTC' },
    }
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        while (made < N) {
          made++
          await client.beta.deployments.create(body as any)
        }
      }),
    )
    console.log(`\ndeployments: ${N} every minute, created in ${((Date.now() - t0) / 1000).toFixed(1)} s`)

    const nc = await connect({ servers: nats.url })
    const claims = await new Kvm(nc).create(Buckets.scheduleClaims)
    /** Per occurrence (ms), the delay (ms) of each deployment's claim marked done. */
    const done = new Map<number, number[]>()
    const watch = await claims.watch({ key: 'claim.>', include: 'updates' })
    void (async () => {
      for await (const e of watch) {
        const k = parseClaimKey(e.key)
        if (!k || !('done' in decode<ClaimValue>(e.value))) continue
        const list = done.get(k.at) ?? []
        list.push(e.created.getTime() - k.at)
        done.set(k.at, list)
      }
    })()

    const measure = async (label: string, orchestrators: TroupeProcess[]) => {
      // From the first whole minute after all are up, MINUTES occurrences.
      const first = Math.ceil((Date.now() + 2000) / MIN) * MIN
      await sleep(first - Date.now() - 500)
      const cpu0 = orchestrators.map(cpuMs)
      const serve0 = cpuMs(serve)
      const occurrences = Array.from({ length: MINUTES }, (_, i) => first + i * MIN)
      // Until every occurrence is done for all deployments, or a minute after the last.
      const deadline = occurrences.at(-1)! + MIN
      while (Date.now() < deadline && !occurrences.every((at) => (done.get(at)?.length ?? 0) >= N)) await sleep(200)
      const cpu = orchestrators.map(cpuMs).reduce((a, b) => a + b, 0) - cpu0.reduce((a, b) => a + b, 0)
      const fired = occurrences.reduce((n, at) => n + (done.get(at)?.length ?? 0), 0)
      const delays = occurrences.flatMap((at) => done.get(at) ?? [])
      console.log(
        `  ${label.padEnd(18)} ${fired}/${N * MINUTES} occurrences fired  delay p50 ${pct(delays, 0.5).toFixed(0)} ms  p99 ${pct(delays, 0.99).toFixed(0)} ms  ` +
          `max ${pct(delays, 1).toFixed(0)} ms  orchestrator CPU ${((cpu * 1000) / Math.max(1, fired)).toFixed(0)} µs/occurrence ` +
          `(${(cpu / 1000).toFixed(1)} s)  serve CPU ${((cpuMs(serve) - serve0) / 1000).toFixed(1)} s`,
      )
      for (const at of occurrences) {
        const d = done.get(at) ?? []
        console.log(`    ${new Date(at).toISOString()}  ${d.length} done, the last ${pct(d, 1).toFixed(0)} ms after`)
      }
    }
    const a = await start('orchestrate', 'orchestrate-1')
    await measure('one orchestrator', [a])
    const b = await start('orchestrate', 'orchestrate-2')
    await measure('two orchestrators', [a, b])
    watch.stop()
    await nc.close()
  } finally {
    for (const p of procs) p.killNow()
    await nats.stop()
  }
}
