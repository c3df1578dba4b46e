import { comparePaths } from '../../protocol/memory-rules.js'
import type { Head } from './records.js'

/** One entry of a listing: a memory, or a `memory_prefix` standing for the memories below a folder at the depth asked. */
export type TreeItem = { kind: 'memory'; head: Head } | { kind: 'prefix'; path: string }

/** Where a page of a listing ends: the last item's path, and whether it was a prefix (its folder is skipped whole). */
export interface TreePosition {
  p: string
  k: 0 | 1
}

/**
 * A store's live memories as its owner holds them: by id, and by path in code-point order (a sorted array: one splice
 * per write, a binary search per lookup, nothing read from the store). Every path with a given prefix sorts together,
 * which is what folder listings and the overlap rule stand on.
 */
export class MemoryTree {
  private readonly byId = new Map<string, Head>()
  private readonly byPath = new Map<string, string>()
  private readonly sorted: string[] = []
  /** Writes since it was made: a session's mount asks whether anything changed since it last looked (`memories.index`). */
  private writes = 0

  constructor(heads: Head[]) {
    for (const h of heads) {
      this.byId.set(h.head.id, h)
      this.byPath.set(h.head.path, h.head.id)
      this.sorted.push(h.head.path)
    }
    this.sorted.sort(comparePaths)
  }

  get size(): number {
    return this.byId.size
  }

  /** How many puts and removes it has had. */
  get changes(): number {
    return this.writes
  }

  get(id: string): Head | undefined {
    return this.byId.get(id)
  }

  atPath(path: string): Head | undefined {
    const id = this.byPath.get(path)
    return id === undefined ? undefined : this.byId.get(id)
  }

  /** Every live memory, in path order. */
  all(): Head[] {
    return this.sorted.map((p) => this.atPath(p)!)
  }

  /**
   * The memory whose path blocks `path` for memory `self` (none for a new one): the same path, an ancestor (a memory at
   * `/a` blocks `/a/b`) or a descendant (a memory at `/a/b` blocks `/a`), since the store is mounted as files.
   */
  conflict(path: string, self?: string): Head | undefined {
    const same = this.atPath(path)
    if (same && same.head.id !== self) return same
    for (let i = path.indexOf('/', 1); i > 0; i = path.indexOf('/', i + 1)) {
      const up = this.atPath(path.slice(0, i))
      if (up && up.head.id !== self) return up
    }
    const below = `${path}/`
    for (let i = this.lowerBound(below); i < this.sorted.length && this.sorted[i]!.startsWith(below); i++) {
      const h = this.atPath(this.sorted[i]!)!
      if (h.head.id !== self) return h
    }
    return undefined
  }

  /** Adds a new memory or replaces one's head (its path may have changed). */
  put(h: Head): void {
    this.writes++
    const old = this.byId.get(h.head.id)
    if (old && old.head.path !== h.head.path) this.unlink(old.head.path)
    if (!old || old.head.path !== h.head.path) {
      this.byPath.set(h.head.path, h.head.id)
      this.sorted.splice(this.lowerBound(h.head.path), 0, h.head.path)
    }
    this.byId.set(h.head.id, h)
  }

  remove(id: string): void {
    const old = this.byId.get(id)
    if (!old) return
    this.writes++
    this.byId.delete(id)
    this.unlink(old.head.path)
  }

  /**
   * One page under `prefix` in path order: memories at most `depth` segments below it (0: all), deeper ones folded into
   * one prefix item per folder at that depth. `after` is where the previous page ended. `more`: items follow.
   */
  page(prefix: string, depth: number, after: TreePosition | undefined, limit: number): { items: TreeItem[]; more: boolean } {
    let i = this.lowerBound(prefix)
    if (after) {
      // The page resumes after the last item: past a prefix item, past everything beneath it.
      i = Math.max(i, this.upperBound(after.p))
      if (after.k === 1) while (i < this.sorted.length && this.sorted[i]!.startsWith(after.p)) i++
    }
    const items: TreeItem[] = []
    while (i < this.sorted.length && this.sorted[i]!.startsWith(prefix)) {
      const path = this.sorted[i]!
      const folder = depth === 0 ? undefined : folderAt(path, prefix.length, depth)
      if (items.length === limit) return { items, more: true }
      if (folder === undefined) {
        items.push({ kind: 'memory', head: this.atPath(path)! })
        i++
      } else {
        items.push({ kind: 'prefix', path: folder })
        while (i < this.sorted.length && this.sorted[i]!.startsWith(folder)) i++
      }
    }
    return { items, more: false }
  }

  private unlink(path: string): void {
    this.byPath.delete(path)
    const i = this.lowerBound(path)
    if (this.sorted[i] === path) this.sorted.splice(i, 1)
  }

  /** The first index whose path is not before `path`. */
  private lowerBound(path: string): number {
    let lo = 0
    let hi = this.sorted.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (comparePaths(this.sorted[mid]!, path) < 0) lo = mid + 1
      else hi = mid
    }
    return lo
  }

  /** The first index whose path is after `path`. */
  private upperBound(path: string): number {
    let lo = 0
    let hi = this.sorted.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (comparePaths(this.sorted[mid]!, path) <= 0) lo = mid + 1
      else hi = mid
    }
    return lo
  }
}

/** The folder (with its trailing `/`) `depth` segments below the prefix that `path` lies under, or undefined if it lies no deeper. */
function folderAt(path: string, from: number, depth: number): string | undefined {
  let at = from - 1
  for (let d = 0; d < depth; d++) {
    at = path.indexOf('/', at + 1)
    if (at < 0) return undefined
  }
  return path.slice(0, at + 1)
}
