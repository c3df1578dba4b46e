/** A session's workspace saved after each tool call and restored on another host (sync.ts; store.ts, files.ts). */
export { DEFAULT_WORKSPACE_BOUNDS, type WorkspaceBounds } from './manifest.js'
export { WorkspaceStore } from './store.js'
export { WorkspaceSync, workspaceOf } from './sync.js'
