import { type Entry, type FileEntry, sameEntry } from './files.js'
import type { BlobRef } from './store.js'

/** What a workspace may hold and still be saved (`TROUPE_WORKSPACE_MAX_FILES`, `TROUPE_WORKSPACE_MAX_MIB`). */
export interface WorkspaceBounds {
  /** Files, directories and links together. Default 10,000. */
  maxEntries: number
  /** Bytes of regular files together. Default 1 GiB. */
  maxBytes: number
}

export const DEFAULT_WORKSPACE_BOUNDS: WorkspaceBounds = { maxEntries: 10_000, maxBytes: 1024 * 1024 * 1024 }

/** An entry as saved: a file names the blob holding its bytes. */
export type Saved = Exclude<Entry, FileEntry> | (FileEntry & { blob: BlobRef })

/**
 * A session's workspace as of one save. Entries are pairs, not an object: a file may be named `__proto__`. `id` tells
 * a save whose answer was lost whether it landed.
 */
export interface Manifest {
  v: 1
  id: string
  /** 1 for the first save, one more for each. */
  gen: number
  /** When it was saved (ms). */
  at: number
  entries: Array<[string, Saved]>
}

/** The workspace before its first save. */
export const EMPTY: Manifest = { v: 1, id: '', gen: 0, at: 0, entries: [] }

/** Whether `now` holds exactly the entries `before` did. */
export function unchanged(now: Map<string, Saved>, before: Map<string, Saved>): boolean {
  if (now.size !== before.size) return false
  for (const [p, e] of now) {
    const b = before.get(p)
    if (!b || !sameEntry(b, e)) return false
  }
  return true
}
