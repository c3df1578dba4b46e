import { constants as C, closeSync, lstatSync, openSync, readdirSync, readlinkSync, realpathSync } from 'node:fs'
import { performance } from 'node:perf_hooks'

/** What one file or directory counts at least: its inode, which a flood of empty files would otherwise spend freely. */
const PER_ENTRY = 256
/** The watch looks at least this often while the sandbox runs, and less often when a look takes long. */
const WATCH_EVERY_MS = 2_000
const WATCH_SHARE = 20

const DIR_FLAGS = C.O_RDONLY | C.O_DIRECTORY | C.O_NOFOLLOW | C.O_NONBLOCK
/** Entries looked at between two turns of the event loop. */
const YIELD_EVERY = 512

/**
 * The bytes a session keeps in `roots` (its writable directories): each file at the larger of what it occupies on
 * disk (st_blocks × 512) and its length, so a sparse file counts at the size it has once published or saved, and
 * each inode once (hard links), every entry at least 256 bytes. The agent controls these trees and may change them
 * while they are walked: every directory is opened without following a link and must still lie inside its root once
 * open (its descriptor says where), and what is in it is looked at through that descriptor, so a directory swapped
 * for a symlink is never followed out. One descriptor is open at a time, however deep the tree.
 */
export async function diskUsage(roots: readonly string[]): Promise<number> {
  const seen = new Set<bigint>()
  let bytes = 0
  let sinceYield = 0
  for (const root of roots) {
    let real: Buffer
    try {
      real = Buffer.from(realpathSync(root))
    } catch {
      continue
    }
    const under = Buffer.concat([real, Buffer.from('/')])
    const queue: Buffer[] = [real]
    for (let dir = queue.pop(); dir; dir = queue.pop()) {
      let fd: number
      try {
        fd = openSync(dir, DIR_FLAGS)
      } catch {
        continue
      }
      try {
        const where = readlinkSync(`/proc/self/fd/${fd}`, { encoding: 'buffer' })
        if (!where.equals(real) && !where.subarray(0, under.length).equals(under)) continue
        const at = Buffer.from(`/proc/self/fd/${fd}/`)
        for (const name of readdirSync(at, { encoding: 'buffer' })) {
          const st = lstatSync(Buffer.concat([at, name]), { bigint: true, throwIfNoEntry: false })
          if (!st) continue
          if (st.nlink > 1n && !st.isDirectory()) {
            if (seen.has(st.ino)) continue
            seen.add(st.ino)
          }
          const occupied = Number(st.blocks) * 512
          bytes += Math.max(PER_ENTRY, st.isFile() ? Math.max(occupied, Number(st.size)) : occupied)
          if (st.isDirectory()) queue.push(Buffer.concat([where, Buffer.from('/'), name]))
          // The calls are synchronous (a few microseconds each, far cheaper than a thread pool round trip apiece); the
          // event loop gets its turn between batches.
          if (++sinceYield >= YIELD_EVERY) {
            sinceYield = 0
            await new Promise<void>((resolve) => setImmediate(resolve))
          }
        }
      } catch {
        // A directory removed or swapped while listed: what it held is counted at the next look.
      } finally {
        closeSync(fd)
      }
    }
  }
  return bytes
}

export interface Usage {
  bytes: number
  over: boolean
}

const mib = (bytes: number) => (bytes / 1024 / 1024).toFixed(1)

/**
 * A session's disk quota (`TROUPE_SANDBOX_DISK_MIB`), kept by looking: no per-directory quota is available to the
 * server (a bind mount of the host's filesystem has none), so it walks the writable directories after each tool that
 * writes and every few seconds while the sandbox runs. Over the quota, writing tools are refused and each tool's
 * result says so, until files are removed; and when a look finds the usage over and still growing (a process in the
 * background keeps writing), `onRunaway` ends the sandbox's processes. No one file grows past the quota at all:
 * RLIMIT_FSIZE (limits.ts). What it cannot stop is a burst between two looks, at most a couple of seconds of writing.
 */
export class DiskQuota {
  private last: Usage | undefined
  private looking: Promise<Usage> | undefined
  private timer: NodeJS.Timeout | undefined
  private lookMs = 0

  constructor(
    private readonly roots: readonly string[],
    readonly limitBytes: number,
    private readonly onRunaway: () => void,
  ) {}

  /** Walks the directories now (one walk at a time: a caller during one gets its answer). */
  measure(): Promise<Usage> {
    this.looking ??= (async () => {
      const t0 = performance.now()
      try {
        const bytes = await diskUsage(this.roots)
        this.lookMs = performance.now() - t0
        this.last = { bytes, over: bytes > this.limitBytes }
        return this.last
      } finally {
        this.looking = undefined
      }
    })()
    return this.looking
  }

  /** Why a tool that writes may not run now (the last look found the quota spent, and a new one still does), or null. */
  async refusal(): Promise<string | null> {
    if (!this.last?.over) return null
    const now = await this.measure()
    return now.over ? `${this.describe(now)} The tool did not run.` : null
  }

  /** `result` as the tool's answer once it has run: marked an error, and saying so, when the quota is spent. */
  async after<R extends { content: Array<{ type: 'text'; text: string }>; is_error: boolean }>(result: R): Promise<R> {
    const now = await this.measure()
    if (!now.over) return result
    return { ...result, is_error: true, content: [...result.content, { type: 'text', text: `\n${this.describe(now)}` }] }
  }

  describe(u: Usage): string {
    return (
      `The session's disk quota is spent: its files take ${mib(u.bytes)} MiB of the ${mib(this.limitBytes)} MiB it may keep ` +
      '(TROUPE_SANDBOX_DISK_MIB; /workspace, /mnt/session/outputs, /tmp and /opt/packages together, a sparse file at its full length). ' +
      'Remove files (rm) to write again; until then write and edit are refused.'
    )
  }

  /** Looks every few seconds until `stop`; never two looks at once. */
  start(): void {
    if (this.timer) return
    const tick = async () => {
      const before = this.last
      const now = await this.measure().catch(() => undefined)
      if (!this.timer) return
      if (now?.over && before && now.bytes > before.bytes) this.onRunaway()
      this.timer = setTimeout(tick, Math.max(WATCH_EVERY_MS, this.lookMs * WATCH_SHARE))
      this.timer.unref()
    }
    this.timer = setTimeout(tick, WATCH_EVERY_MS)
    this.timer.unref()
  }

  stop(): void {
    clearTimeout(this.timer)
    this.timer = undefined
  }
}
