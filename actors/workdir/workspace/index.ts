/** A session's workspace saved after each tool call and restored on another host (sync.ts; store.ts, files.ts). */
export { WorkspaceStore } from './store.js'
export { DEFAULT_WORKSPACE_BOUNDS, WorkspaceSync, workspaceOf } from './sync.js'
