import type { SessionResource } from '../../protocol/schemas/resource.js'
import type { EgressPolicy, EgressSecret, PackageLists, ToolResult } from '../../sandbox/index.js'
import type { MemoryMount } from './memory/index.js'
import type { SealedSecrets } from './sealed-secrets.js'
import type { SkillMount } from './skills/index.js'

/**
 * The port a session actor holds its host directory and sandbox by: everything done in `<data dir>/sessions/<id>`
 * (its sandbox, the files and skills mounted into it, its workspace kept across moves, its outputs folder), whether on
 * the actor's own host (in-process.ts) or on a sandbox host (remote-sandbox.ts, sandbox-host.ts). Plain data in and
 * out, and an AbortSignal for interrupts, so that it can cross NATS. Shaped by what the session asks of it and nothing
 * more; the session imports this folder's index.ts only.
 *
 * The actor checks it still serves the session between `prepare` and `runTool`.
 */
export interface SessionSandbox {
  /**
   * Readies the sandbox for the next tool: the session's files, skills and memory stores in place (mounts.ts,
   * skills/mounts.ts, memory/mounts.ts; a session with skills or memory stores is refused on the local backend), the sandbox made or given the network policy of the
   * session's environment and current agent, and the environment's packages installed (once per sandbox). Slow at
   * times (a mount, an install).
   */
  prepare(signal: AbortSignal): Promise<Prepared>
  /**
   * Runs one built-in tool between the workspace's restore and its save (workspace/sync.ts); then what it changed in
   * a `read_write` memory mount is stored, and what was not is said at the end of its result (memory/mounts.ts).
   */
  runTool(name: string, input: unknown, signal: AbortSignal): Promise<ToolResult>
  /**
   * Whether there is an outputs folder to pass over: a session that never ran a tool on this host has none.
   * Synchronous, so a turn without tools ends without yielding, and its last events and its idle status are stored
   * as one write.
   */
  hasOutputs(): boolean
  /** One pass over the outputs folder (outputs/outputs.ts). Throws only when the host no longer serves the session. */
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
 * What `prepare` found. `ready`: the next tool may run. `refused`: it may not, and this is its result (the session's
 * files or skills are not in place, skills on the local backend, no sandbox host answers). `unenforceable`: this
 * host's backend cannot enforce the session's limited networking. `unprovisioned`: the environment's packages did
 * not install. `stopped`: the call was interrupted, or the actor stopped, while they were being installed.
 */
export type Prepared =
  | { kind: 'ready' }
  | { kind: 'refused'; result: ToolResult }
  | { kind: 'unenforceable' }
  | { kind: 'unprovisioned'; message: string }
  | { kind: 'stopped' }

/**
 * What a session's sandbox asks of the actor it works for, wherever the sandbox runs: in the actor's process (its
 * mailbox, its events) or on a sandbox host (sandbox-host.ts: the fence of the activation that called last, and the
 * errors carried back in the reply). Owned here, implemented by the session.
 */
export interface SandboxOwner {
  /** The actor stopped: a save in progress gives up, a pass over the outputs stops. */
  readonly dead: boolean
  /** Throws when the actor stopped (the retryable 503 its replacement answers). */
  alive(): void
  /** Throws when the actor may have lost the session (`then`: what it does not do until it knows). */
  checkServing(then?: string): void
  /** Tells the client, as a `session.error` the turn goes on after (retry_status `retrying`). */
  report(message: string): void
}

/**
 * What the session is now, as its sandbox needs it: recomputed by the actor before each tool (a session update may
 * have changed the agent's MCP servers, an added resource the mounts). Plain data: it crosses NATS to a sandbox host.
 * `sandboxSpec` (spec.ts) makes one from the session's environment, agent, resources and skills.
 */
export interface SandboxSpec {
  /** The network policy (egress.ts); undefined for a self-hosted environment. */
  network: EgressPolicy | undefined
  /** The environment's package lists, installed before the first tool of each sandbox. */
  packages: PackageLists
  /** The session's resources: its files mounted read-only beneath /mnt/session/uploads (mounts.ts). */
  resources: SessionResource[]
  /**
   * The session's memory stores (fixed for its life), each at /mnt/memory/<slug> (memory/mounts.ts). A caller that
   * predates them sends none: read as `?? []`.
   */
  memory?: MemoryMount[]
  /**
   * The session's custom skills (fixed for its life), unpacked read-only beneath /workspace/skills (skills/mounts.ts).
   * A caller that predates them sends none: read as `?? []`.
   */
  skills: SkillMount[]
  /**
   * The secrets of the session's vaults' `environment_variable` credentials (sandbox/egress/secrets.ts), on a sandbox
   * host only, opened there from `sealed_secrets`; never made by `sandboxSpec`. Absent: none.
   */
  secrets?: EgressSecret[]
  /**
   * The same secrets as they cross NATS to a sandbox host (sealed-secrets.ts): sealed to that host's key by the
   * session's `prepare`, for this session and that host. Absent: none.
   */
  sealed_secrets?: SealedSecrets
}

/**
 * Where a session's sandbox gets its secrets: asked at each `prepare` (a credential rotated or archived applies from
 * the next tool), answering them and what could not be used (told to the client once per activation; never a secret).
 */
export type SecretSource = () => Promise<{ secrets: EgressSecret[]; problems: string[] }>
