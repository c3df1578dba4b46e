// Deployment schedules under chaos: two `troupe orchestrate` processes fire a few every-minute deployments on a fast
// schedule clock shared by every process of the run, while the first orchestrator is SIGKILLed every few seconds (and
// started again) and the run's other faults hit hosts and NATS. The check (checks.ts, scheduleOccurrences): every
// occurrence from each deployment's first to the end of the load made exactly one run, with its session.
import { spawn, type ChildProcess } from 'node:child_process'
import { createWriteStream, mkdirSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import type Anthropic from '@anthropic-ai/sdk'
import { parseClock } from '../../protocol/clock.js'
import { onCleanup } from './cleanup.js'
import type { Rng } from './rng.js'

const BIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../bin/troupe.mjs')
/**
 * A minute of the schedule clock every 12 real seconds: the catch-up window (5 minutes) is then 60 real seconds, more
 * than a NATS node's fault window (10 s cut off, then up to the 25 s failover budget) and an orchestrator's restart
 * together. At 6 s a minute (30 s of catch-up) an occurrence due during a `nats-stop`, whose orchestrators both sat on
 * the cut-off node, was past the window by the time one could claim it (seed 21): a loss made by compressing time,
 * which real minutes do not have.
 */
const RATE = 5
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** What the check needs: per deployment, its first occurrence and its scheduled runs. */
export interface ScheduleData {
  /** The schedule clock's reading when the load ended: occurrences up to a minute before it must have fired. */
  endClock: number
  kills: number
  deployments: Array<{
    id: string
    first: number
    runs: Array<{ id: string; at: number; session: string | null; error: string | null; sessionFound: boolean }>
  }>
}

export class Schedules {
  /** The clock every process of the run is given (`TROUPE_SCHEDULE_CLOCK`). */
  readonly clockSpec = `start=2026-03-01T00:00:30Z,rate=${RATE},since=${Date.now()}`
  readonly clock = parseClock(this.clockSpec)
  private readonly procs: Array<ChildProcess | undefined> = [undefined, undefined]
  private readonly ids: Array<{ id: string; first: number }> = []
  kills = 0

  constructor(
    private readonly natsUrl: string,
    private readonly logDir: string,
    /** More environment for orchestrator `i` (webhooks: the keyring, and a receiver port of its own). */
    private readonly envOf: (i: number) => Record<string, string> = () => ({}),
  ) {
    mkdirSync(logDir, { recursive: true })
    onCleanup(() => {
      for (const p of this.procs) p?.kill('SIGKILL')
    })
  }

  /** Starts orchestrator `i` and waits for its ready line. */
  async start(i: number): Promise<void> {
    const proc = spawn(process.execPath, [BIN, 'orchestrate'], {
      env: {
        ...(process.env as Record<string, string>),
        NATS_URL: this.natsUrl,
        TROUPE_REPLICAS: '3',
        TROUPE_SCHEDULE_CLOCK: this.clockSpec,
        LOG_LEVEL: 'info',
        ...this.envOf(i),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    this.procs[i] = proc
    proc.stderr!.pipe(createWriteStream(path.join(this.logDir, `orchestrate-${i + 1}.log`), { flags: 'a' }))
    await new Promise<void>((resolve, reject) => {
      let out = ''
      const timer = setTimeout(() => reject(new Error(`orchestrator ${i + 1} did not start within 60 s`)), 60_000)
      proc.stdout!.on('data', (d) => {
        out += d
        if (/troupe orchestrate ready/.test(out)) {
          clearTimeout(timer)
          resolve()
        }
      })
      proc.once('exit', (code) => reject(new Error(`orchestrator ${i + 1} exited (${code})`)))
    })
  }

  async deploy(client: Anthropic, agentId: string, environmentId: string, n: number): Promise<void> {
    for (let i = 0; i < n; i++) {
      const d = await client.beta.deployments.create({
        name: `chaos-${i}`,
        agent: agentId,
        environment_id: environmentId,
        initial_events: [{ type: 'user.message', content: [{ type: 'text', text: 'scheduled' }] }],
        schedule: { type: 'cron', expression: '* * * * *', timezone: 'UTC' },
      } as any)
      this.ids.push({ id: d.id, first: Date.parse((d.schedule as any).upcoming_runs_at[0]) })
    }
  }

  /**
   * Until `endAt`: SIGKILL the first orchestrator every 3–8 s (seeded), and start it again a moment later.
   * `beforeKill` runs just before each signal, told whether the process still runs (webhooks: waits until a delivery of
   * its is in flight), `afterKill` once the process is gone.
   */
  async run(
    endAt: number,
    rng: Rng,
    say: (line: string) => void,
    hooks: { beforeKill?(running: boolean): Promise<void>; afterKill?(): void } = {},
  ): Promise<void> {
    while (Date.now() < endAt) {
      await sleep(rng.int(3000, 8000))
      if (Date.now() >= endAt) break
      const proc = this.procs[0]
      // It may have exited by itself: a start during a NATS fault can fail (then it is started again below).
      const running = !!proc && proc.exitCode === null && proc.signalCode === null
      await hooks.beforeKill?.(running)
      const gone = running ? new Promise((r) => proc.once('exit', r)) : undefined
      proc?.kill('SIGKILL')
      await gone
      hooks.afterKill?.()
      this.kills++
      await sleep(rng.int(200, 2000))
      await this.start(0).catch((err) => say(`orchestrator 1 did not start again: ${(err as Error).message}`))
    }
  }

  stop(): void {
    for (const p of this.procs) p?.kill('SIGTERM')
  }

  /** The runs of every deployment (through the API, retried as a patient client), and whether each session exists. */
  async collect(client: Anthropic, endClock: number): Promise<ScheduleData> {
    const deployments: ScheduleData['deployments'] = []
    for (const d of this.ids) {
      const runs: ScheduleData['deployments'][number]['runs'] = []
      for await (const r of client.beta.deploymentRuns.list({ deployment_id: d.id, trigger_type: 'schedule', limit: 100 } as any) as AsyncIterable<any>) {
        const session = r.session_id as string | null
        const sessionFound =
          session !== null &&
          (await client.beta.sessions.retrieve(session).then(
            (s: any) => s.deployment_id === d.id,
            () => false,
          ))
        runs.push({ id: r.id, at: Date.parse(r.trigger_context.scheduled_at), session, error: r.error?.type ?? null, sessionFound })
      }
      deployments.push({ ...d, runs: runs.sort((a, b) => a.at - b.at) })
    }
    return { endClock, kills: this.kills, deployments }
  }
}
