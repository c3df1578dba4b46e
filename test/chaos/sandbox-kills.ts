// What a sandbox host SIGKILL (`--sandbox-hosts`) must leave right: no process of its sandboxes left running (bwrap
// runs with --die-with-parent); a tool call in flight there ends with an error result, never a hung turn; and the
// probe sessions whose sandbox ran there read their workspace back, so their next tool runs on another sandbox host
// with the workspace as their last completed tool call left it. Looked at while the killed one is down (its restart
// waits for these).
import { readFileSync } from 'node:fs'
import type Anthropic from '@anthropic-ai/sdk'
import { descendantsOf, pidsOf } from '../helpers/procs.js'
import type { Host } from './hosts.js'
import { type SandboxKill, watchSandboxes } from './sandboxes.js'
import { oneTurn, toolResults, type TurnOutcome } from './turn.js'
import type { WorkspaceProbes } from './workspaces.js'

/** A tool call in flight at its sandbox host's SIGKILL, and how it ended. */
export interface InFlightCheck {
  session: string
  /** The killed sandbox host (name). */
  victim: string
  /** The call ran under the victim when it was killed (else it was not in flight there, and is not judged). */
  onVictim: boolean
  /** The tool result said the sandbox host was lost (is_error). */
  ok: boolean
  /** From the signal to the end of the turn (the result, the model's reply, idle), as polled. */
  endedMs?: number
  detail: string
}

/** Probe sessions put in flight at each kill: enough to see it, few enough to leave others idle at the signal. */
const IN_FLIGHT = 3
/** Long enough to be in flight at the signal, short enough that a call that ran elsewhere ends by itself. */
const SLEEP_S = 30
/** How long a sleep may take to show up in the process table. */
const START_BOUND_MS = 15_000
/**
 * The turn of a call in flight ends within this after the signal: the actor gives up after 3 missed keep-alives
 * (one a second), then the model replies to the error.
 */
export const IN_FLIGHT_END_MS = 15_000
/** What RemoteSandbox says when it gives a sandbox host up in the middle of a call. */
export const HOST_LOST = /stopped answering|did not answer|no longer runs/
const SESSION_IN_PATH = /\/sessions\/(sesn_[0-9A-Za-z]+)(?:\/|\s|$)/
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/**
 * The sandboxes (bwrap, one per session) running under `pid` now, and the session of each, from its mounts: in its
 * command line, or (a root server stages the session's directories under /mnt first, launch.ts) in its mount table.
 */
export function sandboxesUnder(pid: number): Map<number, string | undefined> {
  const out = new Map<number, string | undefined>()
  const read = (file: string) => {
    try {
      return readFileSync(file, 'utf8')
    } catch {
      return ''
    }
  }
  for (const p of descendantsOf(pid)) {
    if (p.comm !== 'bwrap' || p.ppid !== pid) continue
    const session =
      SESSION_IN_PATH.exec(read(`/proc/${p.pid}/cmdline`).replaceAll('\0', ' '))?.[1] ?? SESSION_IN_PATH.exec(read(`/proc/${p.pid}/mountinfo`))?.[1]
    out.set(p.pid, session)
  }
  return out
}

export class SandboxKillChecks {
  readonly sandboxes: SandboxKill[] = []
  readonly inFlight: InFlightCheck[] = []
  private n = 0

  constructor(
    readonly probes: WorkspaceProbes,
    private readonly client: Anthropic,
  ) {}

  /**
   * Just before sandbox host `s` is SIGKILLed: the probe sessions whose sandbox runs there, a few of them put in the
   * middle of a tool call, and every process under it; the returned check runs once it is killed.
   */
  async before(s: Host): Promise<(signalledAt: number) => Promise<void>> {
    const pid = s.proc!.proc.pid!
    const held = this.probes.among(new Set(sandboxesUnder(pid).values()))
    const flights = await Promise.all(held.slice(0, IN_FLIGHT).map((session) => this.fly(s, pid, session)))
    // After the calls started: their processes are among what must go.
    const procs = watchSandboxes(s.name, pid)
    return async (signalledAt) => {
      const [gone] = await Promise.all([
        procs.gone(signalledAt),
        (async () => {
          await Promise.all(flights.map((f) => this.landed(f, signalledAt)))
          // Every session that ran there, those whose call was cut off too: tools work again, on another sandbox host.
          await this.probes.check({ name: s.name, id: s.id! }, held, 'sandbox-host')
        })(),
      ])
      this.sandboxes.push(gone)
    }
  }

  /** Starts a slow tool call in `session` and waits until it runs (on the victim, or not). */
  private async fly(s: Host, pid: number, session: string): Promise<{ rec: InFlightCheck; turn: Promise<TurnOutcome> }> {
    const secs = `${SLEEP_S}.${process.pid}${++this.n}`
    const rec: InFlightCheck = { session, victim: s.name, onVictim: false, ok: false, detail: '' }
    this.inFlight.push(rec)
    const turn = oneTurn(this.client, session, `probe-sleep ${secs}`, SLEEP_S * 1000 + 30_000)
    const by = Date.now() + START_BOUND_MS
    for (;;) {
      const pids = pidsOf(`sleep ${secs}`)
      if (pids.length) {
        const under = new Set(descendantsOf(pid).map((p) => p.pid))
        rec.onVictim = pids.some((p) => under.has(p))
        if (!rec.onVictim) rec.detail = 'the call ran on another sandbox host'
        break
      }
      if (Date.now() > by) {
        rec.detail = `the call did not start within ${START_BOUND_MS} ms`
        break
      }
      // `ps` runs synchronously: not so often that the driver's own timers starve.
      await sleep(250)
    }
    return { rec, turn }
  }

  private async landed({ rec, turn }: { rec: InFlightCheck; turn: Promise<TurnOutcome> }, signalledAt: number): Promise<void> {
    const got = await turn
    if (!rec.onVictim) return
    rec.endedMs = Date.now() - signalledAt
    if ('error' in got) {
      rec.detail = got.error
      return
    }
    const [r] = toolResults(got.events)
    rec.ok = !!r && r.isError && HOST_LOST.test(r.text)
    rec.detail = r ? `${r.isError ? 'error: ' : ''}${r.text.slice(0, 200)}` : 'no tool result'
  }
}
