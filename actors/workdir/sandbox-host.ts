import { performance } from 'node:perf_hooks'
import { jetstream } from '@nats-io/jetstream'
import { Kvm } from '@nats-io/kv'
import type { Msg, NatsConnection, Subscription } from '@nats-io/transport-node'
import type { Logger } from 'pino'
import { decode, encode } from '../../protocol/codec.js'
import { isApiError } from '../../protocol/errors/api-error.js'
import { fail } from '../../protocol/errors/fail.js'
import { isId } from '../../protocol/ids.js'
import { SANDBOX_OPS, type SandboxOp, sandboxSubject } from '../../protocol/subjects.js'
import { actorClient, actorWire, every, FenceLost, type Loop, NotServing, type Storage } from '../kit/index.js'
import type { SandboxBackend } from '../../sandbox/index.js'
import type { SandboxOwner, SandboxSpec } from './port.js'
import type { Fenced, KeepCall, KeepReply, PrepareCall, RunCall, SandboxError, Said } from './sandbox-wire.js'
import { type WorkdirDeps, type WorkdirSettings, workdirDeps } from './deps.js'
import { InProcessSandbox } from './in-process.js'
import type { SecretsKey } from './sealed-secrets.js'

/** A call that is not one: no session id, no fence, no call id. */
class BadCall extends Error {}

/** How long a call goes on without a word from its actor before it is aborted (the actor keeps it alive every second). */
export const KEEP_LAPSE_MS = 5000
/** How often bindings are looked over: calls whose actor went quiet, sandboxes left idle. */
const SWEEP_MS = 1000

/**
 * One session's sandbox here, for the activation that called with `fence`: the owner its sandbox answers to. It is
 * dead once a later activation called (superseded) or the actor closed it; it no longer serves once its actor has
 * been quiet for KEEP_LAPSE_MS during a call (a host that died or lost its connection keeps nothing alive).
 */
class Binding implements SandboxOwner {
  readonly sandbox: InProcessSandbox
  spec: SandboxSpec | undefined
  /** Calls in flight, by id. */
  readonly calls = new Map<string, AbortController>()
  /** When the actor last said anything (performance.now). */
  heard = performance.now()
  ended = false
  private reports: string[] = []

  constructor(
    readonly session: string,
    readonly fence: number,
    deps: WorkdirDeps,
  ) {
    this.sandbox = new InProcessSandbox(
      session,
      () => {
        if (!this.spec) throw new Error('prepare before a spec')
        return this.spec
      },
      this,
      deps,
    )
  }

  get dead(): boolean {
    return this.ended
  }

  alive(): void {
    if (this.ended) throw fail('actor_moving', 'session')
  }

  checkServing(then = 'it writes nothing'): void {
    if (this.ended) throw new FenceLost(`session ${this.session}: a later activation uses its sandbox; ${then}`)
    if (this.calls.size && performance.now() - this.heard > KEEP_LAPSE_MS) {
      throw new NotServing(`session ${this.session}: its actor stopped keeping the call alive; ${then}`)
    }
  }

  report(message: string): void {
    this.reports.push(message)
  }

  said(): Said {
    const reports = this.reports
    this.reports = []
    return { reports, outputs: this.sandbox.hasOutputs() }
  }

  /** Stops what runs and closes the sandbox (its processes go); this binding serves nothing more. */
  async end(): Promise<void> {
    this.ended = true
    for (const ac of this.calls.values()) ac.abort()
    await this.sandbox.close()
  }
}

export interface SandboxHostOptions {
  nc: NatsConnection
  hostId: string
  log: Logger
  deps: WorkdirDeps
  /** Opens the secrets sessions seal to this host (its public half in the host's roster beat). */
  secretsKey: SecretsKey
}

/**
 * The sandbox host's side (`troupe sandbox`): runs sessions' sandboxes for actors on other hosts, each an
 * InProcessSandbox as the actor's own host would run it, answering `troupe.sandbox.<host id>.<op>`
 * (remote-sandbox.ts is the caller). Calls of a session are fenced by activation (sandbox-wire.ts): a later one ends
 * the earlier's sandbox and its calls, and the earlier is refused from then on. A sandbox left idle for the shell's
 * idle time (`shellIdleMs`) is closed, so one whose actor died without closing it does not stay.
 */
export class SandboxHost {
  private readonly bindings = new Map<string, Binding>()
  /**
   * Tracked calls from the moment they arrive (before their binding is settled, which may wait for an earlier
   * activation's sandbox to close), by call id: a keep-alive or an abort that comes meanwhile finds them.
   */
  private readonly arrived = new Map<string, AbortController>()
  /** Per session, the binding change in progress: calls of one session are bound one at a time. */
  private readonly binding = new Map<string, Promise<unknown>>()
  private readonly subs: Subscription[] = []
  private sweep?: Loop

  constructor(private readonly o: SandboxHostOptions) {}

  start(): void {
    for (const op of SANDBOX_OPS) {
      this.subs.push(this.o.nc.subscribe(sandboxSubject(this.o.hostId, op), { callback: (_err, m) => void this.serve(op, m) }))
    }
    this.sweep = every(
      SWEEP_MS,
      () => this.pass(),
      (err) => this.o.log.warn({ err }, 'sandbox sweep failed'),
    )
  }

  /** Sessions with a sandbox here (for tests and status). */
  get sessions(): string[] {
    return [...this.bindings.keys()]
  }

  async stop(): Promise<void> {
    for (const s of this.subs) s.unsubscribe()
    await this.sweep?.stop()
    await Promise.all([...this.bindings.values()].map((b) => b.end().catch(() => undefined)))
    this.bindings.clear()
  }

  private async serve(op: SandboxOp, m: Msg): Promise<void> {
    let reply: unknown
    try {
      reply = { ok: true, ...(await this.answer(op, decode(m.data))) }
    } catch (err) {
      reply = { ok: false, ...this.refusal(op, err) }
    }
    m.respond(encode(reply))
  }

  private async answer(op: SandboxOp, msg: unknown): Promise<object> {
    const { session } = msg as Fenced
    if (typeof session !== 'string' || !isId('sesn', session)) throw new BadCall('no session id')
    if (op === 'keep') return this.keep(msg as KeepCall)
    if (op === 'abort') {
      this.arrived.get((msg as KeepCall).call)?.abort()
      return {}
    }
    const { fence } = msg as Fenced
    if (!Number.isSafeInteger(fence)) throw new BadCall('no fence')
    if (op === 'prepare' || op === 'run' || op === 'outputs') return this.tracked(op, msg as PrepareCall & RunCall)
    if (op === 'close') {
      const b = this.bindings.get(session)
      if (b && b.fence <= fence) await this.drop(b)
      return {}
    }
    // remove
    const b = await this.bind(session, fence)
    await this.drop(b)
    await b.sandbox.remove()
    return {}
  }

  /** A call that may run long: registered as it arrives, then run in the session's binding. */
  /**
   * `spec` with its sealed secrets opened, in memory only; secrets sent in clear are never taken. One that does not
   * open (sealed for another host, altered) is said, and the sandbox gets none.
   */
  private opened(b: Binding, spec: SandboxSpec): SandboxSpec {
    const { sealed_secrets: sealed, secrets: _clear, ...rest } = spec
    if (!sealed) return rest
    try {
      return { ...rest, secrets: this.o.secretsKey.open(sealed, `${b.session}/${this.o.hostId}`) }
    } catch (err) {
      b.report(
        `The environment variables of the session's vault credentials are not set: the sandbox host ${this.o.hostId} could not open them (${(err as Error).message}).`,
      )
      return rest
    }
  }

  private async tracked(op: 'prepare' | 'run' | 'outputs', c: PrepareCall & RunCall): Promise<object> {
    if (typeof c.call !== 'string' || this.arrived.has(c.call)) throw new BadCall('no call id, or one in use')
    const ac = new AbortController()
    this.arrived.set(c.call, ac)
    let b: Binding | undefined
    try {
      b = await this.bind(c.session, c.fence)
      // Ended between its choice and now (a later activation, a close): it must not make a sandbox nobody closes.
      if (b.ended) throw new FenceLost(`session ${c.session}: its sandbox here ended`)
      b.calls.set(c.call, ac)
      b.heard = performance.now()
      if (op === 'prepare') {
        b.spec = this.opened(b, c.spec)
        const prepared = await b.sandbox.prepare(ac.signal)
        return { prepared, ...b.said() }
      }
      if (op === 'run') {
        const result = await b.sandbox.runTool(c.name, c.input, ac.signal)
        return { result, ...b.said() }
      }
      await b.sandbox.publishOutputs()
      return b.said()
    } finally {
      this.arrived.delete(c.call)
      if (b) {
        b.calls.delete(c.call)
        b.heard = performance.now()
      }
    }
  }

  private keep({ session, call }: KeepCall): KeepReply {
    const known = this.arrived.has(call)
    const b = this.bindings.get(session)
    if (known && b?.calls.has(call)) b.heard = performance.now()
    return { known }
  }

  /**
   * The session's binding for an activation with `fence`: the one there, a new one (a later activation ends the
   * earlier's first), or a refusal (an earlier activation).
   */
  private bind(session: string, fence: number): Promise<Binding> {
    const prior = this.binding.get(session) ?? Promise.resolve()
    const next = prior
      .catch(() => undefined)
      .then(async () => {
        const b = this.bindings.get(session)
        if (b && b.fence === fence) return b
        if (b && b.fence > fence) throw new FenceLost(`session ${session}: a later activation uses its sandbox here`)
        if (b) {
          this.o.log.info({ session, fence, was: b.fence }, 'a later activation of the session: its earlier sandbox here ends')
          await this.drop(b)
        }
        const made = new Binding(session, fence, this.o.deps)
        this.bindings.set(session, made)
        return made
      })
    this.binding.set(session, next)
    next
      .finally(() => {
        if (this.binding.get(session) === next) this.binding.delete(session)
      })
      .catch(() => undefined)
    return next
  }

  private async drop(b: Binding): Promise<void> {
    if (this.bindings.get(b.session) === b) this.bindings.delete(b.session)
    await b.end()
  }

  /** Aborts calls whose actor went quiet; closes sandboxes idle past the shell's idle time. */
  private async pass(): Promise<void> {
    const now = performance.now()
    const idle = this.o.deps.settings.shellIdleMs
    for (const b of [...this.bindings.values()]) {
      if (b.calls.size && now - b.heard > KEEP_LAPSE_MS) {
        this.o.log.warn({ session: b.session, calls: b.calls.size }, 'the actor stopped keeping its sandbox calls alive: they are aborted')
        for (const ac of b.calls.values()) ac.abort()
      } else if (!b.calls.size && now - b.heard > idle) {
        this.o.log.info({ session: b.session }, 'sandbox idle: closed')
        await this.drop(b)
      }
    }
  }

  private refusal(op: SandboxOp, err: unknown): SandboxError {
    const message = (err as Error)?.message ?? String(err)
    if (err instanceof FenceLost) return { error: 'fenced', message }
    if (err instanceof NotServing) return { error: 'not_serving', message }
    if (isApiError(err) && err.reason === 'actor_moving') return { error: 'moving', message }
    if (err instanceof BadCall) this.o.log.warn({ op, why: message }, 'sandbox call refused')
    else this.o.log.error({ err, op }, 'sandbox call failed')
    return { error: 'failed', message }
  }
}

export interface SandboxHostDepsOptions {
  nc: NatsConnection
  storage: Storage
  log: Logger
  dataDir: string
  backend: SandboxBackend
  /** Shell idle time and workspace bounds; default DEFAULT_WORKDIR_SETTINGS, as on session hosts. */
  session?: Partial<WorkdirSettings>
  /** The largest output published (`TROUPE_FILE_MAX_MIB`). Default 500 MiB. */
  fileMaxBytes?: number
}

/** What a sandbox host's sandboxes need, opened from its NATS connection alone (it calls the file kind over NATS). */
export function sandboxHostDeps(o: SandboxHostDepsOptions): Promise<WorkdirDeps> {
  const js = jetstream(o.nc)
  const client = actorClient({ wire: actorWire(o.nc), local: () => undefined })
  return workdirDeps({
    js,
    kvm: new Kvm(js),
    storage: o.storage,
    client,
    log: o.log,
    dataDir: o.dataDir,
    backend: o.backend,
    settings: o.session,
    fileMaxBytes: o.fileMaxBytes,
  })
}
