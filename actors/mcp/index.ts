/**
 * The MCP client of sessions (issue 43 point 1): a session's connections to the MCP servers its agent names, their tool
 * lists and calls, through `@modelcontextprotocol/sdk`. A part with no API of its own, like actors/workdir/: nothing
 * here imports the session kind, which uses it through `McpPool` (docs/ARCHITECTURE.md, "MCP toolsets").
 */
export { DEFAULT_MCP_TIMINGS, McpConnection, NO_AUTH, type McpAuth, type McpResult, type McpTimings, type McpTool } from './connection.js'
export { McpFailure } from './failure.js'
export { MAX_RESULT_CHARS } from './content.js'
export { type McpClients, mcpClients, McpPool, type McpServerRef } from './pool.js'
export { MAX_SERVER_TOOLS, MAX_SERVER_TOOLS_BYTES } from './tool-list.js'
