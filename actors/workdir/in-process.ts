import { rm } from 'node:fs/promises'
import type { SessionResource } from '../../protocol/schemas/resource.js'
import { localBackend, type Sandbox, type SandboxBackend, type SandboxKind, type ToolResult } from '../../sandbox/index.js'
import { errorResult } from '../../sandbox/types.js'
import type { WorkdirDeps } from './deps.js'
import { MemoryMounts } from './memory/index.js'
import { Mounts, sessionDir, systemWithFiles } from './mounts.js'
import type { OutputPublisher } from './outputs/index.js'
import type { Prepared, SandboxOwner, SandboxSpec, SessionSandbox } from './port.js'
import type { EgressSecret } from '../../sandbox/index.js'
import { SkillMounts } from './skills/index.js'
import { WorkspaceSync, workspaceOf } from './workspace/index.js'

/** The answer to a tool of a session with skills on a host whose tools run on the local backend. */
const LOCAL_SKILLS = errorResult(
  "This session's custom skills run only in isolated sandboxes (TROUPE_SANDBOX=isolated), and this host runs tools on the local backend; the tool did not run.",
)

/** The answer to a tool of a session with memory stores on such a host. */
const LOCAL_MEMORY = errorResult(
  "This session's memory stores are mounted only in isolated sandboxes (TROUPE_SANDBOX=isolated), and this host runs tools on the local backend; the tool did not run.",
)

/**
 * The session's secrets, or the refusal of the tool when its vaults cannot be read now (the next tool asks again): a
 * sandbox made without them would lack their variables for its whole life.
 */
export async function loadSecrets(source: () => Promise<EgressSecret[]>): Promise<{ secrets: EgressSecret[] } | { refused: Prepared }> {
  try {
    return { secrets: await source() }
  } catch (err) {
    const why = (err as Error).message
    return { refused: { kind: 'refused', result: errorResult(`The session's vault credentials could not be read (${why}); the tool did not run. Try again.`) } }
  }
}

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
  private readonly memory: MemoryMounts
  private readonly outputs: OutputPublisher
  private readonly shellIdleMs: number

  constructor(
    id: string,
    private readonly spec: () => SandboxSpec,
    private readonly owner: SandboxOwner,
    deps: WorkdirDeps,
    /** The session's secrets, asked at each `prepare`; absent (a sandbox host), they come in the spec. */
    private readonly secrets?: () => Promise<EgressSecret[]>,
  ) {
    this.workdir = sessionDir(deps.dataDir, id)
    this.backend = deps.backend ?? localBackend
    this.shellIdleMs = deps.settings.shellIdleMs
    this.mounts = new Mounts(id, this.workdir, deps.files, deps.log)
    this.skills = new SkillMounts(id, this.workdir, deps.bundles, deps.log)
    this.memory = new MemoryMounts(id, this.workdir, deps.memory, deps.log, this.backend.writerUid ?? null)
    this.outputs = deps.outputs.publisher(id, owner)
    const bounds = { maxEntries: deps.settings.workspaceMaxEntries, maxBytes: deps.settings.workspaceMaxBytes }
    this.workspace = new WorkspaceSync(id, workspaceOf(this.backend.kind, this.workdir), `${this.workdir}.workspace-gen`, owner, {
      store: deps.workspaces,
      bounds,
      log: deps.log,
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
    const memory = spec.memory ?? []
    if (memory.length && this.backend.kind !== 'isolated') return { kind: 'refused', result: LOCAL_MEMORY }
    const unmounted =
      (await this.mounts.ready(spec.resources, signal)) ?? (await this.skills.ready(skills, signal)) ?? (await this.memory.ready(memory, signal))
    const loaded = this.secrets ? await loadSecrets(this.secrets) : { secrets: spec.secrets ?? [] }
    if ('refused' in loaded) return loaded.refused
    const sandbox = this.shell(spec, skills.length > 0, loaded.secrets)
    if (!sandbox) return { kind: 'unenforceable' }
    if (!this.provisioned) {
      const r = await sandbox.provision(spec.packages, signal)
      if (signal.aborted || this.owner.dead) return { kind: 'stopped' }
      if (!r.ok) return { kind: 'unprovisioned', message: r.message }
      this.provisioned = true
    }
    return unmounted ? { kind: 'refused', result: unmounted } : { kind: 'ready' }
  }

  /**
   * The workspace is brought here before the first tool of this activation, and saved after each (workspace/sync.ts);
   * what the tool changed in a `read_write` memory mount is stored after it (memory/mounts.ts).
   */
  async runTool(name: string, input: unknown, signal: AbortSignal): Promise<ToolResult> {
    const sandbox = this.sandbox
    if (!sandbox) throw new Error('runTool before prepare')
    const result = await this.workspace.around(signal, () => sandbox.run(name, input, signal))
    const memory = this.spec().memory ?? []
    return memory.length ? this.memory.after(memory, result) : result
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
  private shell(spec: SandboxSpec, skills: boolean, secrets: EgressSecret[]): Sandbox | undefined {
    const { network } = spec
    if (network?.type === 'limited' && !this.backend.enforcesNetwork) return undefined
    if (secrets.length && !(network && this.backend.enforcesNetwork)) this.unusable(secrets)
    if (this.sandbox && network) this.sandbox.setNetwork(network)
    if (this.sandbox) {
      this.sandbox.setSecrets(secrets)
      return this.sandbox
    }
    const memory = (spec.memory ?? []).map((m) => ({ slug: m.slug, readOnly: m.access === 'read_only' }))
    this.sandbox = this.backend.create({ workdir: this.workdir, network, skills, ...(memory.length ? { memory } : {}), ...(secrets.length ? { secrets } : {}) })
    return this.sandbox
  }

  /** Secrets need an egress proxy to put them in: said once per sandbox where there is none, and no variable is set. */
  private toldUnusable = false
  private unusable(secrets: readonly EgressSecret[]): void {
    if (this.toldUnusable) return
    this.toldUnusable = true
    const names = secrets.map((s) => s.name).join(', ')
    this.owner.report(
      `The environment variables of the session's vault credentials (${names}) are not set: they are put in only by the egress proxy of an isolated sandbox with a network (this host: ${this.backend.kind}${this.backend.enforcesNetwork ? '' : ', no egress proxy'}).`,
    )
  }
}
