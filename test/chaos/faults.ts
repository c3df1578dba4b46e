// The faults: a plan drawn from the seed (kinds, targets, gaps), then run one at a time while the load runs, each
// in a window recorded from the first signal to the recovery, with probes timing how soon the sessions it touched
// answer again. Every wait is bounded.
import type Anthropic from '@anthropic-ai/sdk'
import type { NatsCluster } from '../helpers/nats-cluster.js'
import type { Hosts, Host } from './hosts.js'
import type { KillChecks } from './kill-checks.js'
import { substream } from './rng.js'
import { type SandboxKillChecks, sandboxesUnder } from './sandbox-kills.js'
import { Buckets, EVENTS_STREAM, ObjectStores, objectStream } from '../../protocol/subjects.js'

/** The streams Troupe keeps: the events, one per KV bucket (`KV_<bucket>`) and one per object store (`OBJ_<name>`). */
const PROJECT_STREAMS = [EVENTS_STREAM, ...Object.values(Buckets).map((b) => `KV_${b}`), ...Object.values(ObjectStores).map(objectStream)]
import type { FaultKind, FaultWindow, ProbeResult } from './types.js'

export interface PlannedFault {
  kind: FaultKind
  /** Pause before this fault starts (after the previous one recovered, or after the warm-up). */
  gapMs: number
  /** Which host or NATS node, for the kinds that pick one (modulo the count). */
  pick: number
}

/** How long each kind takes before recovery starts: a fault is not begun unless this fits in the load. */
const NOMINAL_MS: Record<FaultKind, number> = {
  'host-kill': 8_000,
  'host-stop': 12_000,
  'nats-leader': 10_000,
  'stream-leader': 10_000,
  'nats-stop': 12_000,
  // The kill, the calls cut off there giving up (3 missed keep-alives), the probe sessions' next tools, the restart.
  'sandbox-kill': 15_000,
}
const HOST_KILL_DOWN_MS = 2_000
/** Longer than the 2 s heartbeat TTL: the stopped host's partitions must move. */
const HOST_STOP_MS = 10_000
const NATS_DOWN_MS = 5_000
const NATS_STOP_MS = 10_000
const WARMUP_MS = 5_000
/** A probe that gets no answer within this gives up; the report counts it as never recovered. */
const PROBE_BOUND_MS = 45_000
const PROBE_EVERY_MS = 250
/**
 * A write probe's attempt may wait this long: after a SIGKILL nothing hangs on the dead owner (its subscriptions
 * went with its connection, so the gateway answers 503 after its own short wait), and an attempt that reached the
 * new owner waits for the session's replay, which is exactly the moment it measures.
 */
const WRITE_ATTEMPT_MS = 10_000
/** Sessions probed for a NATS fault, which touches every session. */
const NATS_PROBES = 8

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** The whole plan for `kinds`: each round a seeded shuffle of the kinds, so every kind comes up early. */
export function planFaults(seed: number, kinds: readonly FaultKind[], count = 40): PlannedFault[] {
  if (!kinds.length) return []
  const rng = substream(seed, 'faults')
  const plan: PlannedFault[] = []
  while (plan.length < count) {
    for (const kind of rng.shuffle(kinds)) plan.push({ kind, gapMs: rng.int(3_000, 6_000), pick: rng.int(0, 1_000_000) })
  }
  return plan.slice(0, count)
}

export interface FaultDeps {
  cluster: NatsCluster
  hosts: Hosts
  /** No retries and a short timeout: each call is one probe attempt. */
  probeClient: Anthropic
  /** Retrying as the official client does by itself (bounded): one write per session at a host SIGKILL. */
  writeClient: Anthropic
  sessions: string[]
  /** The host id holding a session's partition, from `troupe_placement`. */
  ownerOf(session: string): Promise<string | undefined>
  /** Resolves true once placement is balanced over the live hosts again (bounded). */
  balanced(): Promise<boolean>
  /** What a host SIGKILL must leave right besides failover (sandboxes, workspaces, uploads), checked while it is down. */
  kills?: KillChecks
  /** The `troupe sandbox` processes (`--sandbox-hosts`), for `sandbox-kill`. */
  sandboxHosts?: Hosts
  /** What a sandbox host SIGKILL must leave right (its sandboxes, calls in flight there, workspaces), checked while it is down. */
  sandboxKills?: SandboxKillChecks
  /** Progress lines. */
  say(line: string): void
}

export class FaultRunner {
  readonly windows: FaultWindow[] = []
  private stopAt = Infinity

  constructor(private readonly d: FaultDeps) {}

  /** Runs the plan from now until `endAt` (the load's end), one fault at a time. */
  async run(plan: PlannedFault[], endAt: number): Promise<void> {
    this.stopAt = endAt
    await sleep(Math.min(WARMUP_MS, Math.max(0, endAt - Date.now())))
    for (const f of plan) {
      if (Date.now() + f.gapMs + NOMINAL_MS[f.kind] + 3_000 > this.stopAt) break
      await sleep(f.gapMs)
      const w = await this.one(f)
      if (w) this.windows.push(w)
    }
  }

  private async one(f: PlannedFault): Promise<FaultWindow | undefined> {
    const w: FaultWindow = { kind: f.kind, target: '', start: 0, end: 0, steps: [], probes: [], probe: f.kind === 'host-kill' ? 'write' : 'read' }
    const step = (what: string) => {
      w.steps.push({ at: Date.now(), what })
      this.d.say(`${f.kind} ${w.target}: ${what}`)
    }
    let probes: Promise<ProbeResult[]> = Promise.resolve([])
    try {
      let watched: string[]
      let recover: () => Promise<void>
      if (f.kind === 'host-kill' || f.kind === 'host-stop') {
        const up = this.d.hosts.all.filter((h) => h.state === 'up')
        if (!up.length) return undefined
        const h = up[f.pick % up.length]!
        w.target = h.name
        watched = await this.ownedBy(h)
        // Set up before the window starts, so that the failover it measures starts at the signal.
        const afterKill = f.kind === 'host-kill' ? await this.d.kills?.before(h) : undefined
        w.start = Date.now()
        recover = f.kind === 'host-kill' ? await this.hostKill(h, step, afterKill) : await this.hostStop(h, step)
      } else if (f.kind === 'sandbox-kill') {
        const up = this.d.sandboxHosts?.all.filter((h) => h.state === 'up') ?? []
        // Among those running sandboxes: sessions stay on the sandbox host they are bound to while it answers, so
        // after a kill and a restart one may run nothing, and killing it would test nothing.
        const busy = up.filter((h) => sandboxesUnder(h.proc!.proc.pid!).size > 0)
        const pool = busy.length ? busy : up
        if (!pool.length) return undefined
        const h = pool[f.pick % pool.length]!
        w.target = h.name
        // No failover to time: the sessions keep their actors; the checks after the kill are the measure.
        watched = []
        const afterKill = await this.d.sandboxKills?.before(h)
        w.start = Date.now()
        recover = await this.hostKill(h, step, afterKill, this.d.sandboxHosts!)
      } else {
        const name =
          f.kind === 'nats-leader'
            ? await this.d.cluster.metaLeader()
            : f.kind === 'stream-leader'
              ? await this.d.cluster.streamLeader(EVENTS_STREAM)
              : this.d.cluster.nodes[f.pick % this.d.cluster.nodes.length]!.name
        if (!name) {
          this.d.say(`${f.kind}: no ${f.kind === 'nats-stop' ? 'node' : 'leader'} found, skipped`)
          return undefined
        }
        w.target = name
        watched = this.d.sessions.slice(0, NATS_PROBES)
        w.start = Date.now()
        recover = await this.natsFault(f.kind, name, step)
      }
      // Only once the fault is in: a probe sent before the signal landed would be answered by the healthy process.
      probes = w.probe === 'write' ? this.probeWrites(watched, w.start) : this.probe(watched, w.start, (s) => this.readEvents(s))
      await recover()
      // Recovery includes the partitions settling back: until then hand-overs still answer 503.
      step((await this.d.balanced()) ? 'partitions balanced again' : 'partitions not balanced 30 s after recovery')
    } catch (err) {
      w.error = (err as Error).message
      step(`failed: ${w.error}`)
    }
    w.end = Date.now()
    w.probes = await probes
    return w
  }

  private async ownedBy(h: Host): Promise<string[]> {
    const owners = await Promise.all(this.d.sessions.map(async (s) => [s, await this.d.ownerOf(s).catch(() => undefined)] as const))
    return owners.filter(([, o]) => o !== undefined && o === h.id).map(([s]) => s)
  }

  /** Each fault injects at once and returns its recovery. A serve host's, or a sandbox host's with `hosts` theirs. */
  private async hostKill(
    h: Host,
    step: (s: string) => void,
    afterKill?: (signalledAt: number) => Promise<void>,
    hosts: Hosts = this.d.hosts,
  ): Promise<() => Promise<void>> {
    await hosts.kill(h)
    const checked = afterKill?.(Date.now()).catch((err: Error) => step(`the checks after the kill broke: ${err.message}`))
    step(`SIGKILL (${h.id})`)
    return async () => {
      await sleep(HOST_KILL_DOWN_MS)
      // The host stays down until what it left is looked at from the others.
      if (checked) {
        await checked
        step(
          hosts === this.d.hosts
            ? 'its sandboxes, the workspaces of its sessions and its uploads checked'
            : 'its sandboxes, the calls in flight there and the workspaces of its sessions checked',
        )
      }
      step('restarting')
      let rec = await hosts.start(h, true)
      // A start-up slower than startTroupe's 30 s (a loaded machine) gets one more go; both starts are reported.
      if (rec.error) {
        step(`restart failed: ${rec.error}; once more`)
        rec = await hosts.start(h, true)
      }
      step(rec.error ? `restart failed: ${rec.error}` : `restarted${h.url ? ` on ${h.url}` : ''}, ready ${rec.readyAt! - rec.spawnAt} ms after spawn`)
    }
  }

  private async hostStop(h: Host, step: (s: string) => void): Promise<() => Promise<void>> {
    this.d.hosts.pause(h)
    step(`SIGSTOP (${h.id})`)
    return async () => {
      await sleep(HOST_STOP_MS)
      this.d.hosts.resume(h)
      step('SIGCONT')
      // The window lasts until the resumed host serves again (it re-reads its records first).
      const deadline = Date.now() + 15_000
      while (Date.now() < deadline) {
        const ok = await fetch(`${h.url}/readyz`, { signal: AbortSignal.timeout(1000) }).then(
          (r) => r.status === 200,
          () => false,
        )
        if (ok) return step('ready again')
        await sleep(200)
      }
      step('not ready 15 s after SIGCONT')
    }
  }

  private async natsFault(kind: FaultKind, name: string, step: (s: string) => void): Promise<() => Promise<void>> {
    const node = this.d.cluster.node(name)
    if (kind === 'nats-stop') {
      node.pause()
      step('SIGSTOP (cut off: a stand-in for a partition)')
    } else {
      await node.kill()
      step(`SIGKILL (${kind === 'nats-leader' ? 'meta leader' : `${EVENTS_STREAM} leader`})`)
    }
    return async () => {
      if (kind === 'nats-stop') {
        await sleep(NATS_STOP_MS)
        node.resume()
        step('SIGCONT')
      } else {
        await sleep(NATS_DOWN_MS)
        await node.restart()
        step('restarted')
      }
      // Every stream the hosts use must have its leader again (the heartbeats' bucket above all), not only the events'.
      await this.d.cluster.waitStable({ streams: PROJECT_STREAMS, timeoutMs: 60_000 })
      step(`cluster stable 3 s, meta leader ${await this.d.cluster.metaLeader()}, ${EVENTS_STREAM} leader ${await this.d.cluster.streamLeader(EVENTS_STREAM)}`)
    }
  }

  /**
   * A page of events, not the session record: the owner may answer a GET from its cache without touching
   * JetStream, which would hide a NATS fault.
   */
  private readEvents(session: string): Promise<unknown> {
    return this.d.probeClient.beta.sessions.events.list(session, { limit: 1, order: 'desc' } as any)
  }

  /**
   * A host SIGKILL: when each of its sessions answers a write again, the moment its actor runs on a new owner (or
   * on the restarted host). Two measures of it: single attempts, one at a time (the server's side, to within the
   * gateway's own retry step), and one call sent at the signal through the official client's own retries (what a
   * user sees: it adds the `retry-after-ms` a refused attempt waits). Both write the same metadata value, so only
   * the first write that lands stores a `session.updated`; the others change nothing.
   */
  private async probeWrites(sessions: string[], t0: number): Promise<ProbeResult[]> {
    const body = { metadata: { chaos_failover: new Date(t0).toISOString() } }
    const [raw, client] = await Promise.all([
      this.probeInTurn(sessions, t0, (s) => this.d.probeClient.beta.sessions.update(s, body, { timeout: WRITE_ATTEMPT_MS })),
      Promise.all(
        sessions.map((s) =>
          this.d.writeClient.beta.sessions.update(s, body, { signal: AbortSignal.timeout(PROBE_BOUND_MS) }).then(
            () => Date.now() - t0,
            () => undefined,
          ),
        ),
      ),
    ])
    return raw.map((r, i) => ({ ...r, clientMs: client[i] }))
  }

  /**
   * For each session, the time from `t0` to the first successful `ask`, one attempt at a time (at most one every
   * PROBE_EVERY_MS): at most one request in flight per session, so the probing adds little to a failover's load.
   */
  private probeInTurn(sessions: string[], t0: number, ask: (session: string) => Promise<unknown>): Promise<ProbeResult[]> {
    return Promise.all(
      sessions.map(async (session): Promise<ProbeResult> => {
        for (;;) {
          const at = Date.now()
          if (at - t0 > PROBE_BOUND_MS) return { session }
          const ok = await ask(session).then(
            () => true,
            () => false,
          )
          if (ok) return { session, firstOkMs: Date.now() - t0 }
          await sleep(at + PROBE_EVERY_MS - Date.now())
        }
      }),
    )
  }

  /**
   * For each session, the time from `t0` to the first successful `ask`. Attempts overlap (a new one every
   * PROBE_EVERY_MS, each with the probe client's short timeout), so an attempt stuck on a stopped owner does not
   * hide the moment a new owner starts answering.
   */
  private probe(sessions: string[], t0: number, ask: (session: string) => Promise<unknown>): Promise<ProbeResult[]> {
    return Promise.all(
      sessions.map(
        (session) =>
          new Promise<ProbeResult>((resolve) => {
            let done = false
            const finish = (r: ProbeResult) => {
              if (done) return
              done = true
              clearInterval(timer)
              resolve(r)
            }
            const attempt = () => {
              if (Date.now() - t0 > PROBE_BOUND_MS) return finish({ session })
              ask(session).then(
                () => finish({ session, firstOkMs: Date.now() - t0 }),
                () => undefined,
              )
            }
            const timer = setInterval(attempt, PROBE_EVERY_MS)
            attempt()
          }),
      ),
    )
  }
}
