import type { Dirent } from 'node:fs'
import { readdir } from 'node:fs/promises'
import path from 'node:path'
import { throwIfAborted } from './context.js'

export interface WalkEntry {
  abs: string
  /** Relative to the walk root, '/'-separated. */
  rel: string
  isDir: boolean
}

export interface WalkOptions {
  /** Directories to neither yield nor enter. */
  skipDir?: (name: string) => boolean
  /** Deepest level yielded (1 = the root's direct children); default unlimited. */
  maxDepth?: number
  /** Stop after this many entries so a pattern like "/**" cannot walk a whole disk. */
  maxEntries: number
  signal?: AbortSignal
}

export interface WalkStats {
  visited: number
  /** True when maxEntries cut the walk short. */
  truncated: boolean
}

/**
 * Depth-first, name-sorted (so results are deterministic) directory walk. Symlinks are
 * yielded but never followed, which keeps link cycles from looping forever; unreadable
 * directories are skipped silently since one bad subtree should not fail a search.
 */
export async function* walk(root: string, opts: WalkOptions, stats: WalkStats): AsyncGenerator<WalkEntry> {
  const maxDepth = opts.maxDepth ?? Infinity
  async function* visit(dir: string, relDir: string, depth: number): AsyncGenerator<WalkEntry> {
    let entries: Dirent[]
    try {
      entries = await readdir(dir, { withFileTypes: true })
    } catch {
      return
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    for (const e of entries) {
      throwIfAborted(opts.signal)
      if (stats.visited >= opts.maxEntries) {
        stats.truncated = true
        return
      }
      stats.visited += 1
      const isDir = e.isDirectory()
      if (isDir && opts.skipDir?.(e.name)) continue
      const abs = path.join(dir, e.name)
      const rel = relDir === '' ? e.name : `${relDir}/${e.name}`
      yield { abs, rel, isDir }
      if (isDir && depth < maxDepth) yield* visit(abs, rel, depth + 1)
    }
  }
  yield* visit(root, '', 1)
}
