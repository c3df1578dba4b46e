import { rm } from 'node:fs/promises'
import type { SessionResource } from '../../protocol/schemas/resource.js'
import { localBackend, type Sandbox, type SandboxBackend, type SandboxKind, type ToolResult } from '../../sandbox/index.js'
import { errorResult } from '../../sandbox/types.js'
import { partitionOf } from '../../protocol/subjects.js'
import type { Mailbox } from '../kit/mailbox.js'
import type { HostContext } from '../kit/types.js'
import type { ActorDeps } from './deps.js'
import { egressPolicy, packagesOf } from './egress.js'
import type { SessionEvents } from './events.js'
import type { History } from './history.js'
import { Mounts, sessionDir, systemWithFiles } from './mounts.js'
import type { OutputPublisher } from './outputs.js'
import { RemoteSandbox } from './remote-sandbox.js'
import type { SandboxOwner, SandboxSpec } from './sandbox-owner.js'
import { SkillMounts } from './skill-mounts.js'
import { WorkspaceSync, workspaceOf } from './workspace-sync.js'

/** The answer to a tool of a session with skills on a host whose tools run on the local backend. */
const LOCAL_SKILLS = errorResult(
  "This session's custom skills run only in isolated sandboxes (TROUPE_SANDBOX=isolated), and this host runs tools on the local backend; the tool did not run.",
)

/**
 * What `prepare` found. `ready`: the next tool may run. `refused`: it may not, and this is its result (the session's
 * files or skills are not in place, skills on the local backend, no sandbox host answers). `unenforceable`: this host's backend cannot enforce the session's limited networking.
 * `unprovisioned`: the environment's packages did not install. `stopped`: the call was interrupted, or the actor
 * stopped, while they were being installed.
 */
export type Prepared =
  | { kind: 'ready' }
  | { kind: 'refused'; result: ToolResult }
  | { kind: 'unenforceable' }
  | { kind: 'unprovisioned'; message: string }
  | { kind: 'stopped' }

/**
 * Everything done in a session's host directory (`<data dir>/sessions/<id>`): its sandbox, the files mounted into it,
 * its workspace kept across moves, and its outputs folder. Plain data in and out, and an AbortSignal for interrupts:
 * the seam for sandboxes on other hosts (a client sending these calls over NATS to the host that holds the directory).
 * The actor checks it still serves the session between `prepare` and `runTool` (tool-runner.ts).
 */
export interface SessionSandbox {
  /**
   * Readies the sandbox for the next tool: the session's files and skills in place (mounts.ts, skill-mounts.ts; a
   * session with skills is refused on the local backend), the sandbox made or given the
   * network policy of the session's environment and current agent, and the environment's packages installed (once
   * per sandbox). Slow at times (a mount, an install).
   */
  prepare(signal: AbortSignal): Promise<Prepared>
  /** Runs one built-in tool between the workspace's restore and its save (workspace-sync.ts). */
  runTool(name: string, input: unknown, signal: AbortSignal): Promise<ToolResult>
  /**
   * Whether there is an outputs folder to pass over: a session that never ran a tool on this host has none.
   * Synchronous, so a turn without tools ends without yielding, and its last events and its idle status are stored
   * as one write.
   */
  hasOutputs(): boolean
  /** One pass over the outputs folder (outputs.ts). Throws only when the host no longer serves the session. */
  publishOutputs(): Promise<void>
  /** A live shell keeps the session in memory longer (undefined: the kind's idle time). */
  readonly idleMs: number | undefined
  /** The shell goes (the actor stopped). */
  close(): Promise<void>
  /** The shell goes, and its working directory with it, and its workspace's saved copy (session delete). */
  remove(): Promise<void>
  /**
   * The agent's system prompt as the model should get it where the tools run: the local backend has no
   * /mnt/session/uploads, so the prompt says where the session's files are instead (mounts.ts#systemWithFiles).
   */
  system(system: string | null, resources: readonly SessionResource[]): string | null
}

/**
 * The session's sandbox: on this host, or on a sandbox host when the host's sessions run their tools there
 * (`TROUPE_SANDBOX_PLACEMENT=remote`, remote-sandbox.ts), fenced by the placement revision this actor was made under.
 */
export function sessionSandbox(h: History, events: SessionEvents, mb: Mailbox, deps: ActorDeps): SessionSandbox {
  const id = h.session.id
  const report = (message: string) => events.emit('session.error', { error: { type: 'unknown_error', message, retry_status: { type: 'retrying' } } })
  const { ctx } = deps
  if (ctx.sandboxHosts) {
    return new RemoteSandbox({
      session: id,
      fence: ctx.holding('session', partitionOf(id)) ?? 0,
      spec: () => specOf(h),
      report,
      serves: () => {
        if (mb.dead) return false
        try {
          mb.checkServing()
          return true
        } catch {
          return false
        }
      },
      roster: ctx.sandboxHosts,
      nc: ctx.nc,
      workspaces: deps.workspaces,
      shellIdleMs: deps.settings.shellIdleMs,
      log: ctx.log,
    })
  }
  const owner: SandboxOwner = {
    get dead() {
      return mb.dead
    },
    alive: () => mb.alive(),
    checkServing: (then) => mb.checkServing(then),
    report,
  }
  return new InProcessSandbox(id, () => specOf(h), owner, deps)
}

/** What the session is now, as its sandbox needs it. */
export function specOf(h: History): SandboxSpec {
  return {
    network: egressPolicy(h.rec.env, h.session.agent),
    packages: packagesOf(h.rec.env),
    resources: h.session.resources,
    skills: (h.rec.skills ?? []).map((s) => ({ name: s.name, object: s.object, ...(s.dir ? { dir: s.dir } : {}) })),
  }
}

/** What a session's sandbox needs of the host it runs on. */
export type SandboxDeps = Pick<ActorDeps, 'settings' | 'files' | 'bundles' | 'outputs' | 'workspaces'> & { ctx: Pick<HostContext, 'settings' | 'log'> }

/**
 * The session's sandbox on this host: the one `Sandbox`, made lazily through the host's backend (sandbox/). The
 * actor's own host runs it (`owner` is its mailbox and events), or a sandbox host does for an actor elsewhere
 * (sandbox-host.ts). `spec` is what the session is now, asked at each `prepare`.
 */
export class InProcessSandbox implements SessionSandbox {
  private sandbox: Sandbox | undefined
  /** The environment's packages are installed in this sandbox (asked once per sandbox, before its first tool). */
  private provisioned = false
  private readonly workdir: string
  private readonly workspace: WorkspaceSync
  private readonly backend: SandboxBackend
  private readonly mounts: Mounts
  private readonly skills: SkillMounts
  private readonly outputs: OutputPublisher
  private readonly shellIdleMs: number

  constructor(
    id: string,
    private readonly spec: () => SandboxSpec,
    private readonly owner: SandboxOwner,
    deps: SandboxDeps,
  ) {
    const { dataDir, sandbox } = deps.ctx.settings
    this.workdir = sessionDir(dataDir, id)
    this.backend = sandbox ?? localBackend
    this.shellIdleMs = deps.settings.shellIdleMs
    this.mounts = new Mounts(id, this.workdir, deps.files, deps.ctx.log)
    this.skills = new SkillMounts(id, this.workdir, deps.bundles, deps.ctx.log)
    this.outputs = deps.outputs.publisher(id, owner)
    const bounds = { maxEntries: deps.settings.workspaceMaxEntries, maxBytes: deps.settings.workspaceMaxBytes }
    this.workspace = new WorkspaceSync(id, workspaceOf(this.backend.kind, this.workdir), `${this.workdir}.workspace-gen`, owner, {
      store: deps.workspaces,
      bounds,
      log: deps.ctx.log,
    })
  }

  get kind(): SandboxKind {
    return this.backend.kind
  }

  get idleMs(): number | undefined {
    return this.sandbox ? this.shellIdleMs : undefined
  }

  async prepare(signal: AbortSignal): Promise<Prepared> {
    const spec = this.spec()
    const skills = spec.skills ?? []
    // Admission refuses such sessions on a local host, but one may move to such a host from an isolated one.
    if (skills.length && this.backend.kind !== 'isolated') return { kind: 'refused', result: LOCAL_SKILLS }
    const unmounted = (await this.mounts.ready(spec.resources, signal)) ?? (await this.skills.ready(skills, signal))
    const sandbox = this.shell(spec, skills.length > 0)
    if (!sandbox) return { kind: 'unenforceable' }
    if (!this.provisioned) {
      const r = await sandbox.provision(spec.packages, signal)
      if (signal.aborted || this.owner.dead) return { kind: 'stopped' }
      if (!r.ok) return { kind: 'unprovisioned', message: r.message }
      this.provisioned = true
    }
    return unmounted ? { kind: 'refused', result: unmounted } : { kind: 'ready' }
  }

  /** The workspace is brought here before the first tool of this activation, and saved after each (workspace-sync.ts). */
  runTool(name: string, input: unknown, signal: AbortSignal): Promise<ToolResult> {
    const sandbox = this.sandbox
    if (!sandbox) throw new Error('runTool before prepare')
    return this.workspace.around(signal, () => sandbox.run(name, input, signal))
  }

  hasOutputs(): boolean {
    return this.outputs.hasFolder()
  }

  publishOutputs(): Promise<void> {
    return this.outputs.publish()
  }

  async close(): Promise<void> {
    this.provisioned = false
    await this.sandbox?.close()
  }

  async remove(): Promise<void> {
    await this.close()
    await rm(this.workdir, { recursive: true, force: true }).catch(() => undefined)
    await this.workspace.remove()
  }

  system(system: string | null, resources: readonly SessionResource[]): string | null {
    return systemWithFiles(system, resources, this.backend.kind, this.workdir)
  }

  /**
   * The session's sandbox, with the network policy of its environment and current agent (applied afresh each time:
   * a session update may have changed the MCP servers). Undefined when this host's backend cannot enforce a limited
   * policy: admission refuses such sessions on such a host, but one may move to it from a host that can.
   */
  private shell({ network }: SandboxSpec, skills: boolean): Sandbox | undefined {
    if (network?.type === 'limited' && !this.backend.enforcesNetwork) return undefined
    if (this.sandbox && network) this.sandbox.setNetwork(network)
    return (this.sandbox ??= this.backend.create({ workdir: this.workdir, network, skills }))
  }
}
