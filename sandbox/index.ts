/**
 * Built-in agent toolset (`agent_toolset_20260401`: bash, read, write, edit, glob, grep) and the backends that run
 * it: `isolated` (a bubblewrap sandbox per session, isolated/) and `local` (the server's own host process, host/).
 * backend.ts picks one at start-up (`TROUPE_SANDBOX`).
 */
export type { Sandbox, SandboxOptions, ToolResult } from './types.js'
export { createHostSandbox } from './host/sandbox.js'
export { localBackend, openSandboxBackend, readSandboxSetting, type SandboxBackend, type SandboxKind, type SandboxSetting } from './backend.js'
export { type EgressPolicy, PACKAGE_REGISTRY_HOSTS, policyAllows } from './egress/policy.js'
export type { EgressSecret } from './egress/secrets.js'
export { listedManagers, type PackageLists, type Provisioned } from './packages.js'
export { BUILTIN_TOOL_NAMES, builtinToolDefinitions, type ToolDefinition } from './definitions.js'
export { raiseFileLimit } from './egress/descriptors.js'
