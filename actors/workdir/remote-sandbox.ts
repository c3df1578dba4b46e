import { setTimeout as delay } from 'node:timers/promises'
import { nuid } from '@nats-io/nats-core'
import type { NatsConnection } from '@nats-io/transport-node'
import type { Logger } from 'pino'
import { decode, encode } from '../../protocol/codec.js'
import { fail } from '../../protocol/errors/fail.js'
import type { SessionResource } from '../../protocol/schemas/resource.js'
import { type SandboxHostBeat, type SandboxOp, sandboxSubject } from '../../protocol/subjects.js'
import type { EgressSecret } from '../../sandbox/index.js'
import { errorResult, type ToolResult } from '../../sandbox/types.js'
import { every, FenceLost, isTransientNatsError, type Loop, NotServing, type Roster } from '../kit/index.js'
import { sessionDir, systemWithFiles } from './mounts.js'
import type { Prepared, SandboxSpec, SessionSandbox } from './port.js'
import { sealSecrets } from './sealed-secrets.js'
import { loadSecrets } from './in-process.js'
import type { KeepReply, PrepareReply, RunReply, Said, SandboxReply } from './sandbox-wire.js'
import type { WorkspaceStore } from './workspace/index.js'

/** How often an actor keeps each call in flight alive (the sandbox host aborts it after KEEP_LAPSE_MS without). */
export const KEEP_MS = 1000
/** Keep-alives in a row that get no answer before the sandbox host is taken for gone. */
const KEEP_MISSES = 3
/** The longest a call may take: a tool's own timeout and an install are far shorter; liveness is the keep-alives' job. */
const CALL_TIMEOUT_MS = 6 * 60 * 60_000
/** How long a short call (close, remove, abort) waits for its answer. */
const SHORT_TIMEOUT_MS = 10_000
/** How long `prepare` waits for a sandbox host to be heard when none is (a cluster starting, a sandbox host restarting). */
const ROSTER_WAIT_MS = 5000

/** The sandbox host stopped answering in the middle of a call: what the call did there is unknown. */
class HostLost extends Error {}

/** A sandbox host lost is passed over by the next choice for this long (its roster key may not have aged out yet). */
const SHUN_MS = 5000

export interface RemoteSandboxOptions {
  session: string
  /** The placement revision the actor was made under (HostContext.holding): every call carries it. */
  fence: number
  spec: () => SandboxSpec
  /** The session's secrets, asked at each `prepare` and sealed to the host chosen (sealed-secrets.ts). Default none. */
  secrets?: () => Promise<EgressSecret[]>
  /** Says a sandbox host's report as a `session.error` (port.ts). */
  report: (message: string) => void
  /**
   * Whether the actor still serves the session (its mailbox's fence): a call in flight is kept alive only while it
   * does, and aborted there once it does not.
   */
  serves: () => boolean
  roster: Roster<SandboxHostBeat>
  nc: NatsConnection
  workspaces: WorkspaceStore
  shellIdleMs: number
  log: Logger
}

/**
 * A session's sandbox on a sandbox host (`TROUPE_SANDBOX_PLACEMENT=remote`): the SessionSandbox calls sent over NATS
 * to the host that runs it (sandbox-host.ts), the abort of an interrupt after them, and a keep-alive every second
 * while a call runs, both ways: the host aborts a call whose actor went quiet, and the actor gives up on a host that
 * stopped answering. The host is chosen when the first tool needs it, by rendezvous hashing of the session id over
 * the sandbox hosts heard (those that enforce limited networking, when the session's is limited; isolated ones, when
 * it has custom skills), and kept while it answers; one that stops is replaced at the next tool, whose workspace is
 * restored there as after any move.
 */
export class RemoteSandbox implements SessionSandbox {
  /** The sandbox host bound, while it answers. */
  private host: string | undefined
  private outputs = false
  /** Sandbox hosts lost lately, with when they may be chosen again. */
  private readonly shunned = new Map<string, number>()
  /** Sandbox hosts already said to take no secrets. */
  private readonly toldNoKey = new Set<string>()

  constructor(private readonly o: RemoteSandboxOptions) {}

  get idleMs(): number | undefined {
    return this.host ? this.o.shellIdleMs : undefined
  }

  async prepare(signal: AbortSignal): Promise<Prepared> {
    const spec = this.o.spec()
    const loaded = this.o.secrets ? await loadSecrets(this.o.secrets) : { secrets: [] }
    if ('refused' in loaded) return loaded.refused
    const { secrets } = loaded
    // A host that went away since it was bound (or since the roster last heard it) ran nothing of this tool: the next
    // choice gets one more try before the tool is refused.
    for (let tries = 2; ; tries--) {
      const host = this.host ?? (await this.choose(spec, signal))
      if (!host) {
        if (signal.aborted) return { kind: 'stopped' }
        return {
          kind: 'refused',
          result: errorResult('No sandbox host is running (this server runs tools on `troupe sandbox` hosts); the tool did not run. Try again later.'),
        }
      }
      this.host = host
      try {
        const r = await this.call<PrepareReply>(host, 'prepare', { spec: this.sealedFor(host, spec, secrets) }, signal)
        return r.prepared
      } catch (err) {
        if (!(err instanceof HostLost)) throw err
        if (tries > 1 && !signal.aborted) continue
        return { kind: 'refused', result: errorResult(`${err.message} The tool did not run; try again.`) }
      }
    }
  }

  async runTool(name: string, input: unknown, signal: AbortSignal): Promise<ToolResult> {
    const host = this.host
    if (!host) throw new Error('runTool before prepare')
    try {
      return (await this.call<RunReply>(host, 'run', { name, input }, signal)).result
    } catch (err) {
      if (!(err instanceof HostLost)) throw err
      return errorResult(
        `${err.message} What the tool did there is unknown. The next tool runs on another sandbox host, with the workspace as the last completed tool call left it.`,
      )
    }
  }

  hasOutputs(): boolean {
    return this.outputs
  }

  async publishOutputs(): Promise<void> {
    const host = this.host
    if (!host) return
    try {
      await this.call<Said>(host, 'outputs', {})
    } catch (err) {
      if (!(err instanceof HostLost)) throw err
      // The folder was on that host: what it held and had not published went with it (as after any move).
      this.o.log.warn({ session: this.o.session, host }, 'the sandbox host stopped before the outputs were published')
    }
  }

  async close(): Promise<void> {
    const host = this.host
    this.host = undefined
    this.outputs = false
    if (host) await this.short(host, 'close').catch(() => undefined)
  }

  /**
   * Every sandbox host heard drops the session's directory (it may have run there in an earlier activation), and the
   * saved workspace goes from the store.
   */
  async remove(): Promise<void> {
    this.host = undefined
    await Promise.all(
      this.o.roster
        .live()
        .map((h) => this.short(h, 'remove').catch((err) => this.o.log.warn({ err, host: h, session: this.o.session }, 'sandbox directory not removed'))),
    )
    await this.o.workspaces.remove(this.o.session).catch((err) => this.o.log.error({ err, session: this.o.session }, 'saved workspace not removed'))
  }

  system(system: string | null, resources: readonly SessionResource[]): string | null {
    const host = this.host ?? this.o.roster.preferred(this.o.session)
    const beat = host && this.o.roster.value(host)
    return beat ? systemWithFiles(system, resources, beat.kind, sessionDir(beat.data_dir, this.o.session)) : system
  }

  // ------------------------------------------------------------------------------------------------- helpers

  /** `spec` with `secrets` sealed to `host`'s key; a host without one (an older version) gets none, and that is said. */
  private sealedFor(host: string, spec: SandboxSpec, secrets: readonly EgressSecret[]): SandboxSpec {
    if (!secrets.length) return spec
    const key = this.o.roster.value(host)?.secrets_key
    if (key) return { ...spec, sealed_secrets: sealSecrets(key, `${this.o.session}/${host}`, secrets) }
    if (!this.toldNoKey.has(host)) {
      this.toldNoKey.add(host)
      this.o.report(`The environment variables of the session's vault credentials are not set: the sandbox host ${host} takes no secrets (an older version).`)
    }
    return spec
  }

  /** The sandbox host the session prefers among those that can run it, waiting a little for one to be heard. */
  private async choose(spec: SandboxSpec, signal: AbortSignal): Promise<string | undefined> {
    const limited = spec.network?.type === 'limited'
    // Custom skills and memory stores are mounted only in isolated sandboxes: a host on the local backend would refuse
    // every tool.
    const skills = (spec.skills ?? []).length > 0 || (spec.memory ?? []).length > 0
    const fit = (h: string) => {
      const beat = this.o.roster.value(h)
      return (this.shunned.get(h) ?? 0) <= Date.now() && (!limited || !!beat?.enforces_network) && (!skills || beat?.kind === 'isolated')
    }
    for (const until = Date.now() + ROSTER_WAIT_MS; ; ) {
      const host = this.o.roster.preferred(this.o.session, fit)
      if (host || signal.aborted || Date.now() >= until) return host
      await delay(200, undefined, { signal }).catch(() => undefined)
    }
  }

  /**
   * One tracked call: sent with the fence and a call id, kept alive every KEEP_MS while it runs, aborted there when
   * `signal` is. Throws HostLost when the host stops answering, the actor's own errors for the host's refusals.
   */
  private async call<T extends Said>(host: string, op: SandboxOp, body: object, signal?: AbortSignal): Promise<T> {
    const { session, fence, nc } = this.o
    const call = nuid.next()
    let lose: (err: Error) => void = () => undefined
    const lost = new Promise<never>((_, reject) => (lose = reject))
    // Lost after the call settled: nobody waits for it any more.
    lost.catch(() => undefined)
    let misses = 0
    const abort = () => void this.short(host, 'abort', { call }).catch(() => undefined)
    const keep: Loop = every(
      KEEP_MS,
      async () => {
        if (!this.o.serves()) {
          // The actor may have lost the session: what runs for it there stops now, and the actor steps down.
          abort()
          lose(new NotServing(`session ${session}: this host no longer serves it; its sandbox call is aborted`))
          return
        }
        try {
          const r = decode<SandboxReply<KeepReply>>((await nc.request(sandboxSubject(host, 'keep'), encode({ session, call }), { timeout: KEEP_MS })).data)
          misses = 0
          if (r.ok && !r.known) lose(new HostLost(`The sandbox host ${host} no longer runs this call (it restarted).`))
        } catch (err) {
          if (!isTransientNatsError(err)) throw err
          if (++misses >= KEEP_MISSES) lose(new HostLost(`The sandbox host ${host} stopped answering.`))
        }
      },
      (err) => this.o.log.warn({ err, host, session }, 'sandbox keep-alive failed'),
      { firstAfter: true },
    )
    signal?.addEventListener('abort', abort, { once: true })
    try {
      const sent = nc.request(sandboxSubject(host, op), encode({ session, fence, call, ...body }), { timeout: CALL_TIMEOUT_MS })
      const m = await Promise.race([sent, lost]).catch((err) => {
        if (err instanceof HostLost) throw err
        if (isTransientNatsError(err)) throw new HostLost(`The sandbox host ${host} did not answer (${(err as Error).message}).`)
        throw err
      })
      const r = decode<SandboxReply<T>>(m.data)
      if (!r.ok) throw refusal(r.error, r.message)
      for (const message of r.reports) this.o.report(message)
      this.outputs ||= r.outputs
      return r
    } catch (err) {
      if (err instanceof HostLost) {
        this.o.log.warn({ session, host, op, why: err.message }, 'sandbox host lost: the next tool binds another')
        if (this.host === host) this.host = undefined
        this.shunned.set(host, Date.now() + SHUN_MS)
      }
      throw err
    } finally {
      signal?.removeEventListener('abort', abort)
      // Not awaited: a keep-alive in flight must not hold the call's answer back.
      void keep.stop()
    }
  }

  /** A call that answers at once (close, remove, abort). */
  private async short(host: string, op: SandboxOp, body: object = {}): Promise<void> {
    const { session, fence, nc } = this.o
    const r = decode<SandboxReply<object>>(
      (await nc.request(sandboxSubject(host, op), encode({ session, fence, ...body }), { timeout: SHORT_TIMEOUT_MS })).data,
    )
    if (!r.ok) throw refusal(r.error, r.message)
  }
}

/** The sandbox host's refusal as the actor's own error: the first two make it step down, as its own fence would. */
function refusal(error: string, message: string): Error {
  if (error === 'fenced') return new FenceLost(message)
  if (error === 'not_serving') return new NotServing(message)
  if (error === 'moving') return fail('actor_moving', 'session')
  return new Error(`sandbox host: ${message}`)
}
