/**
 * A session's memory stores mounted in its host directory (issue 42 point 4): materialised from the store before each
 * tool, a `read_write` mount's changes stored as the session's versions after each (mounts.ts), every path beneath a
 * mount resolved without following a link (files.ts), through the memory store kind's internal ops (access.ts).
 */
export { type MemoryAccess, memoryAccess } from './access.js'
export { type MemoryMount, MemoryMounts } from './mounts.js'
