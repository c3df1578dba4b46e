import type { SessionResource } from '../../protocol/schemas/resource.js'
import type { EgressPolicy, PackageLists } from '../../sandbox/index.js'
import type { SkillMount } from './skill-mounts.js'

/**
 * What a session's sandbox asks of the actor it works for, wherever the sandbox runs: in the actor's process (its
 * mailbox, its events) or on a sandbox host (sandbox-host.ts: the fence of the activation that called last, and the
 * errors carried back in the reply).
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
 */
export interface SandboxSpec {
  /** The network policy (egress.ts); undefined for a self-hosted environment. */
  network: EgressPolicy | undefined
  /** The environment's package lists, installed before the first tool of each sandbox. */
  packages: PackageLists
  /** The session's file resources, mounted read-only beneath /mnt/session/uploads (mounts.ts). */
  resources: SessionResource[]
  /**
   * The session's custom skills (fixed for its life), unpacked read-only beneath /workspace/skills (skill-mounts.ts).
   * A caller that predates them sends none: read as `?? []`.
   */
  skills: SkillMount[]
}
