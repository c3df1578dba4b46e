/** One tool_result's payload as the session actor forwards it to the Messages API. */
export interface ToolResult {
  content: Array<{ type: 'text'; text: string }>
  is_error: boolean
}

import type { EgressPolicy } from './egress/policy.js'
import type { EgressSecret } from './egress/secrets.js'
import type { PackageLists, Provisioned } from './packages.js'

export interface SandboxOptions {
  /**
   * The session's own host directory; created if missing. The local backend works in it; the isolated one keeps the
   * sandbox's workspace/, uploads/, outputs/ and tmp/ beneath it (isolated/layout.ts).
   */
  workdir: string
  /** Max characters of tool output kept in a result; default 30_000. The cap is stated in the result text when applied. */
  maxOutputChars?: number
  /** Default bash timeout in ms; default 120_000. A call may override it with `timeout_ms`. */
  bashTimeoutMs?: number
  /**
   * Environment of the persistent shell; default: local, an allowlist of the server's own
   * environment (PATH, HOME, LANG, …, see `host/env.ts`) so server secrets such as API keys
   * are not handed to agent-run commands; isolated, a fixed one (isolated/layout.ts `insideEnv`).
   */
  env?: Record<string, string>
  /**
   * What the sandbox may reach on the network, through its egress proxy (egress/); default: nothing but its own
   * loopback. Only a backend whose `enforcesNetwork` is true applies it (backend.ts); the local one runs on the host's
   * network whatever this says.
   */
  network?: EgressPolicy
  /**
   * The session has custom skills, unpacked by the server into the directory's `skills/`: the isolated backend binds it
   * read-only at /workspace/skills (isolated/layout.ts). The local backend ignores it (sessions with skills do not run
   * there). Default false.
   */
  skills?: boolean
  /**
   * The session's memory stores, materialised by the server into the directory's `memory/<slug>/`: the isolated backend
   * binds each at /mnt/memory/<slug>, read-only when `readOnly` (isolated/layout.ts). The local backend ignores them
   * (sessions with memory stores do not run there).
   */
  memory?: ReadonlyArray<{ slug: string; readOnly: boolean }>
  /**
   * Secrets the sandbox uses without holding them (egress/secrets.ts): the shell sees each variable holding its
   * placeholder, and trusts the egress proxy's CA, which then reads the HTTPS of their hosts to put them in. Fixed
   * for the shell's life (its environment); their values and hosts change with `setSecrets`. Only a backend whose
   * `enforcesNetwork` is true applies them, with a network; elsewhere no variable is set. Default none.
   */
  secrets?: readonly EgressSecret[]
}

export interface Sandbox {
  /** Runs one built-in tool by name ('bash' | 'read' | 'write' | 'edit' | 'glob' | 'grep'). Unknown names and bad inputs give is_error results, never throws. Aborting `signal` kills whatever runs (the bash command's process group) and resolves with an is_error result saying it was interrupted. */
  run(name: string, input: unknown, signal?: AbortSignal): Promise<ToolResult>
  /**
   * Replaces the network policy for connections opened from now on (a session update changed the MCP servers, or
   * package installation widens it for a while). No-op where no policy applies (the local backend, a sandbox made
   * without one).
   */
  setNetwork(policy: EgressPolicy): void
  /**
   * Replaces what the egress proxy puts into requests from now on (a credential's value or hosts changed, or it was
   * archived). Only the secrets the sandbox was made with have their variables set; others are ignored. No-op where
   * none apply.
   */
  setSecrets(secrets: readonly EgressSecret[]): void
  /**
   * Installs an environment's package lists before the session's first tool runs (packages.ts); at once when they
   * are empty or already installed in this sandbox's directory. The local backend installs nothing: a non-empty list
   * is a failure there.
   */
  provision(packages: PackageLists, signal?: AbortSignal): Promise<Provisioned>
  /** Kills the persistent shell and anything it started. Idempotent. */
  close(): Promise<void>
}

export const DEFAULT_MAX_OUTPUT_CHARS = 30_000
export const DEFAULT_BASH_TIMEOUT_MS = 120_000

export function textResult(text: string, isError = false): ToolResult {
  return { content: [{ type: 'text', text }], is_error: isError }
}

export function errorResult(text: string): ToolResult {
  return textResult(text, true)
}
