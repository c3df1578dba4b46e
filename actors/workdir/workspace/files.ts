import { closeSync, constants, lstatSync, openSync, readdirSync, readlinkSync } from 'node:fs'
import { chmod, chown, lchown, mkdir, open, readlink, realpath, rename, rm, stat, symlink, type FileHandle } from 'node:fs/promises'
import path from 'node:path'
import { nuid } from '@nats-io/nats-core'

/** One entry of a workspace, as saved: a regular file, a directory or a symbolic link (never followed). */
export type Entry = FileEntry | { t: 'd'; mode: number } | { t: 'l'; target: string }

export interface FileEntry {
  t: 'f'
  /** Permission bits (0o777); setuid, setgid and sticky are not kept. */
  mode: number
  size: number
  /** Modification time in whole ms: with size and mode, what tells a changed file (see `sameEntry`). */
  mtime: number
}

export interface ScanBounds {
  maxEntries: number
  maxBytes: number
}

/** A workspace as read: its entries by path (POSIX, relative), or how it passed the bounds (the scan stopped there). */
export interface Scan {
  entries: Map<string, Entry>
  bytes: number
  over?: 'entries' | 'bytes'
}

/** Whether a stored entry still describes the one on disk. */
export function sameEntry(a: Entry, b: Entry): boolean {
  if (a.t !== b.t) return false
  if (a.t === 'l') return a.target === (b as typeof a).target
  if (a.t === 'd') return a.mode === (b as typeof a).mode
  const f = b as FileEntry
  return a.mode === f.mode && a.size === f.size && a.mtime === f.mtime
}

const O_DIR = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW
const O_READ = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK
const O_NEW = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW
const READ_BYTES = 1024 * 1024
/** Entries a scan reads before it gives the event loop a turn. */
const YIELD_EVERY = 256
const isRoot = process.getuid?.() === 0

/** What the kernel says an open descriptor is: the path it was opened at, as long as nothing moved it. */
const openedAt = (fh: FileHandle) => readlink(`/proc/self/fd/${fh.fd}`)

/**
 * A session's workspace directory on this host, read and written for saving and restoring it. The agent controls what
 * is in it and the server may be root, so nothing here goes through a symbolic link: entries are read with lstat
 * through the descriptor of their directory (`/proc/self/fd/N/<name>`), links are stored as links (readlink), and a
 * directory or file is used only once the descriptor it was opened with (O_NOFOLLOW) turns out, through
 * `/proc/self/fd`, to be exactly the path meant: a directory swapped for a link to somewhere else midway is skipped.
 * Regular files, directories and links are kept; FIFOs, sockets and devices are not, nor names that are not UTF-8.
 * `skip` names top-level entries that belong to something else (the local backend's session directory is the
 * workspace, with the session's other directories inside it).
 */
export class WorkspaceDir {
  private real: string | undefined

  constructor(
    readonly root: string,
    private readonly skip: ReadonlySet<string> = new Set(),
  ) {}

  /** Whether a path of a manifest names something in this workspace: relative, normal, not under a skipped name. */
  owns(rel: string): boolean {
    const parts = rel.split('/')
    return parts.every((p) => p !== '' && p !== '.' && p !== '..') && !this.skip.has(parts[0]!)
  }

  /**
   * Reads the whole tree; stops as soon as it passes `bounds`. Synchronous calls, a turn of the event loop given back
   * every YIELD_EVERY entries: a thread-pool call per entry cost 3 to 5 times as much (1,000 files: 16–23 ms against
   * 3–5 ms), and the loop is never held for more than about a millisecond.
   */
  async scan(bounds: ScanBounds): Promise<Scan> {
    const out: Scan = { entries: new Map(), bytes: 0 }
    // No directory (the agent removed the local backend's session directory): nothing in it.
    const real = await this.realRoot().catch(() => undefined)
    if (!real) return out
    let sinceYield = 0
    const walk = async (rel: string): Promise<void> => {
      const abs = rel ? `${real}/${rel}` : real
      const dirs: string[] = []
      let fd: number
      try {
        fd = openSync(abs, O_DIR)
      } catch {
        return
      }
      try {
        if (readlinkSync(`/proc/self/fd/${fd}`) !== abs) return
        const base = `/proc/self/fd/${fd}`
        for (const name of readdirSync(base).sort()) {
          if (!rel && this.skip.has(name)) continue
          const e = entryAt(`${base}/${name}`)
          if (!e) continue
          const p = rel ? `${rel}/${name}` : name
          out.entries.set(p, e)
          if (e.t === 'f') out.bytes += e.size
          if (e.t === 'd') dirs.push(p)
          if (out.entries.size > bounds.maxEntries) out.over = 'entries'
          else if (out.bytes > bounds.maxBytes) out.over = 'bytes'
          if (out.over) return
          if (++sinceYield >= YIELD_EVERY) {
            sinceYield = 0
            closeSync(fd)
            fd = -1
            await new Promise((r) => setImmediate(r))
            // The directory was let go meanwhile: look at it again only through a descriptor that is still it.
            fd = openSync(abs, O_DIR)
            if (readlinkSync(`/proc/self/fd/${fd}`) !== abs) return
          }
        }
      } catch {
        return
      } finally {
        if (fd >= 0) closeSync(fd)
      }
      for (const d of dirs) {
        if (out.over) return
        await walk(d)
      }
    }
    await walk('')
    return out
  }

  /**
   * The file at `rel` opened for reading, with what it is as opened; undefined when it is no longer a regular file at
   * exactly that path (removed, replaced, or reached through a link).
   */
  async openFile(rel: string): Promise<{ fh: FileHandle; entry: FileEntry } | undefined> {
    const abs = `${await this.realRoot()}/${rel}`
    const fh = await open(abs, O_READ).catch(() => undefined)
    if (!fh) return undefined
    try {
      const st = await fh.stat()
      if ((await openedAt(fh)) === abs && st.isFile()) return { fh, entry: { t: 'f', mode: st.mode & 0o777, size: st.size, mtime: Math.floor(st.mtimeMs) } }
    } catch {}
    await fh.close()
    return undefined
  }

  /** Removes an entry (a directory with everything in it); links are removed, never followed. */
  async remove(rel: string): Promise<void> {
    await rm(`${await this.realRoot()}/${rel}`, { recursive: true, force: true })
  }

  /** Makes a directory (its parent exists); its mode is set by `finishDir`, once its contents are in. */
  async makeDir(rel: string): Promise<void> {
    const abs = `${await this.realRoot()}/${rel}`
    await mkdir(abs, { mode: 0o700 })
    const o = await this.owner()
    if (o) await chown(abs, o.uid, o.gid)
  }

  async finishDir(rel: string, mode: number): Promise<void> {
    await chmod(`${await this.realRoot()}/${rel}`, mode)
  }

  /**
   * Writes a file whole under a fresh name beside it, then renames it over `rel`: never through an inode already there
   * (a hard link, a link), and never a half-written file at its path. Mode, owner (the workspace's) and mtime as saved.
   */
  async writeFile(rel: string, entry: FileEntry, data: AsyncIterable<Uint8Array>): Promise<void> {
    const abs = `${await this.realRoot()}/${rel}`
    const temp = `${path.posix.dirname(abs)}/.troupe-restore-${nuid.next()}`
    const fh = await open(temp, O_NEW, 0o600)
    try {
      for await (const chunk of data) await fh.write(chunk)
      await fh.chmod(entry.mode)
      const o = await this.owner()
      if (o) await fh.chown(o.uid, o.gid)
      // Half a millisecond in: the kernel keeps nanoseconds, and the float seconds utimes takes would land a hair
      // below the whole millisecond, which the next scan would read as a change.
      const t = (entry.mtime + 0.5) / 1000
      await fh.utimes(t, t)
    } catch (err) {
      await fh.close().catch(() => undefined)
      await rm(temp, { force: true })
      throw err
    }
    await fh.close()
    await rename(temp, abs)
  }

  async writeLink(rel: string, target: string): Promise<void> {
    const abs = `${await this.realRoot()}/${rel}`
    const temp = `${path.posix.dirname(abs)}/.troupe-restore-${nuid.next()}`
    await symlink(target, temp)
    const o = await this.owner()
    if (o) await lchown(temp, o.uid, o.gid)
    await rename(temp, abs)
  }

  /** The workspace's real path (the data directory may be reached through links of the host's own). */
  private async realRoot(): Promise<string> {
    this.real ??= await realpath(this.root)
    return this.real
  }

  /**
   * Whom restored entries belong to: whoever owns the workspace (the sandbox's host uid under a root server);
   * undefined when the server is not root, whose entries are its own anyway.
   */
  private async owner(): Promise<{ uid: number; gid: number } | undefined> {
    if (!isRoot) return undefined
    const st = await stat(await this.realRoot())
    return { uid: st.uid, gid: st.gid }
  }
}

function entryAt(p: string): Entry | undefined {
  try {
    const st = lstatSync(p)
    if (st.isFile()) return { t: 'f', mode: st.mode & 0o777, size: st.size, mtime: Math.floor(st.mtimeMs) }
    if (st.isDirectory()) return { t: 'd', mode: st.mode & 0o777 }
    if (st.isSymbolicLink()) return { t: 'l', target: readlinkSync(p) }
  } catch {}
  return undefined
}

/** A file's bytes, up to a megabyte at a time, as they are read; `sizeHint` keeps a small file's buffer small. */
export async function* readAll(fh: FileHandle, sizeHint = READ_BYTES): AsyncGenerator<Uint8Array> {
  const size = Math.min(READ_BYTES, Math.max(64 * 1024, sizeHint))
  for (;;) {
    const buf = Buffer.allocUnsafe(size)
    const { bytesRead } = await fh.read(buf, 0, size, null)
    if (bytesRead === 0) return
    yield buf.subarray(0, bytesRead)
  }
}
