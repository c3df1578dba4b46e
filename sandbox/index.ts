/**
 * Built-in agent toolset (`agent_toolset_20260401`: bash, read, write, edit, glob, grep).
 * Only the host-process backend exists so far; it runs tools as the server's own user and
 * is not an isolation boundary (see host/sandbox.ts).
 */
export type { Sandbox, SandboxOptions, ToolResult } from './types.js'
export { createHostSandbox } from './host/sandbox.js'
export { BUILTIN_TOOL_NAMES, builtinToolDefinitions, type ToolDefinition } from './definitions.js'
