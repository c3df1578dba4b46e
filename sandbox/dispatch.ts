import type { EgressPolicy } from './egress/policy.js'
import type { EgressSecret } from './egress/secrets.js'
import { listedManagers, type PackageLists, type Provisioned } from './packages.js'
import { BUILTIN_TOOL_NAMES, isBuiltinToolName } from './definitions.js'
import { describeToolError, type FileToolName, INTERRUPTED } from './host/file-tools.js'
import { errorResult, type Sandbox, type ToolResult } from './types.js'

/** What a backend provides: bash in its persistent shell, the five file tools, and shutting both down. */
export interface BackendTools {
  bash(input: unknown, signal?: AbortSignal): Promise<ToolResult>
  file(name: FileToolName, input: unknown, signal?: AbortSignal): Promise<ToolResult>
  setNetwork?(policy: EgressPolicy): void
  setSecrets?(secrets: readonly EgressSecret[]): void
  /** Default: a non-empty list fails (the local backend). */
  provision?(packages: PackageLists, signal?: AbortSignal): Promise<Provisioned>
  close(): Promise<void>
}

/** The `Sandbox` every backend presents: unknown names, a closed sandbox and thrown errors all become is_error results. */
export function toolSandbox(tools: BackendTools): Sandbox {
  let closed = false
  return {
    async run(name, input, signal) {
      if (closed) return errorResult('The sandbox is closed.')
      if (!isBuiltinToolName(name)) return errorResult(`Unknown tool "${name}". Built-in tools: ${BUILTIN_TOOL_NAMES.join(', ')}.`)
      if (signal?.aborted) return errorResult(INTERRUPTED)
      try {
        return await (name === 'bash' ? tools.bash(input, signal) : tools.file(name, input, signal))
      } catch (err) {
        return errorResult(describeToolError(name, err))
      }
    },
    setNetwork(policy) {
      tools.setNetwork?.(policy)
    },
    setSecrets(secrets) {
      tools.setSecrets?.(secrets)
    },
    async provision(packages, signal) {
      if (tools.provision) return tools.provision(packages, signal)
      const listed = listedManagers(packages)
      return listed.length ? { ok: false, message: `this host’s sandbox backend (local) installs no packages (${listed.join(', ')} listed)` } : { ok: true }
    },
    async close() {
      closed = true
      await tools.close()
    },
  }
}
