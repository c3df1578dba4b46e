import { constants, type Stats } from 'node:fs'
import { type FileHandle, lstat, mkdir, open, readdir, rename, rm, rmdir } from 'node:fs/promises'
import path from 'node:path'

/**
 * File operations beneath a memory mount's directory that never follow a link. A `read_write` mount is the agent's to
 * change, and the server may be root: a directory it walks or writes into may have become a link to anywhere on the
 * host. So every path beneath the mount is resolved one segment at a time from a directory held open with
 * `O_NOFOLLOW` (Node has no `openat`; `/proc/self/fd/<fd>/<name>` is the same thing on Linux: the held directory,
 * then one name in it, whose last component `O_NOFOLLOW`, `lstat`, `rename` and `rm` never follow).
 */

const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW
const FILE_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK

/** `name` inside the directory held open as `dir`. */
const at = (dir: FileHandle, name: string) => `/proc/self/fd/${dir.fd}/${name}`

const code = (err: unknown) => (err as NodeJS.ErrnoException).code

/** Who owns what the server makes in a mount: the sandbox's host uid for a `read_write` one, else the server. */
export type Owner = number | null

/** Opens the mount's own directory (made, and handed to `owner`, when missing). The caller closes it. */
export async function openMount(dir: string, owner: Owner): Promise<FileHandle> {
  // Its parent (the session's memory/) is the server's, so the name is not the agent's to swap: a path is fine here.
  await mkdir(dir, { recursive: true, mode: 0o755 })
  const fh = await open(dir, DIR_FLAGS)
  if (owner !== null)
    await fh.chown(owner, owner).catch(async (err: unknown) => {
      await fh.close()
      throw err
    })
  return fh
}

/**
 * The directory `segments` beneath `root`, each segment opened without following a link. `create`: a missing one is
 * made (mode 0755, handed to `owner`), and whatever else holds its name (a file, a link) is removed first; without it,
 * undefined when any segment is not a real directory. The caller closes what it gets (never `root` itself).
 */
export async function openDirAt(root: FileHandle, segments: readonly string[], create: false): Promise<FileHandle | undefined>
export async function openDirAt(root: FileHandle, segments: readonly string[], create: true, owner: Owner): Promise<FileHandle>
export async function openDirAt(root: FileHandle, segments: readonly string[], create: boolean, owner: Owner = null): Promise<FileHandle | undefined> {
  let dir = root
  try {
    for (const seg of segments) {
      const next = await openOne(dir, seg, create, owner)
      if (dir !== root) await dir.close()
      dir = next as FileHandle
      if (!next) return undefined
    }
    // The mount itself, opened again (so the caller may close it): through the magic link, which is the point here.
    return dir === root ? open(`/proc/self/fd/${root.fd}`, constants.O_RDONLY | constants.O_DIRECTORY) : dir
  } catch (err) {
    if (dir !== root) await dir.close().catch(() => undefined)
    throw err
  }
}

async function openOne(dir: FileHandle, name: string, create: boolean, owner: Owner): Promise<FileHandle | undefined> {
  try {
    return await open(at(dir, name), DIR_FLAGS)
  } catch (err) {
    const c = code(err)
    if (!create) {
      if (c === 'ENOENT' || c === 'ENOTDIR' || c === 'ELOOP') return undefined
      throw err
    }
    // Not a directory (a file, a link): unlinked, never followed.
    if (c === 'ENOTDIR' || c === 'ELOOP') await rm(at(dir, name), { force: true })
    else if (c !== 'ENOENT') throw err
    // EEXIST: a write beside this one (a mount's files are written several at once) made it first.
    await mkdir(at(dir, name), { mode: 0o755 }).catch((e: unknown) => {
      if (code(e) !== 'EEXIST') throw e
    })
    // Handed over through the handle opened without following: whatever the name holds by then, no link is chowned.
    const made = await open(at(dir, name), DIR_FLAGS)
    if (owner !== null)
      await made.chown(owner, owner).catch(async (e: unknown) => {
        await made.close()
        throw e
      })
    return made
  }
}

/**
 * Removes `name` in `dir` whatever it is: a file or a link unlinked, a directory emptied first, each of its entries
 * through a handle opened without following (a recursive `rm` by path would follow a directory the agent swapped for
 * a link between its checks).
 */
async function removeEntry(dir: FileHandle, name: string): Promise<void> {
  const sub = await openOne(dir, name, false, null)
  if (!sub) {
    await rm(at(dir, name), { force: true })
    return
  }
  try {
    for (const e of await readdir(`/proc/self/fd/${sub.fd}`)) await removeEntry(sub, e)
  } finally {
    await sub.close()
  }
  await rmdir(at(dir, name)).catch((err: unknown) => {
    if (code(err) !== 'ENOENT') throw err
  })
}

/** One regular file found by `walk`: its path beneath the mount (`/`-separated) and what `lstat` said of it. */
export interface Found {
  rel: string
  stat: Stats
}

/** What `walk` found that is not a regular file or a directory (a link, a FIFO, a socket), or lay too deep. */
export interface Skipped {
  rel: string
  why: string
}

/**
 * Every regular file beneath the mount, in no particular order, at most `maxDepth` directories down and `maxEntries`
 * entries in all (the rest is skipped, and said). Links are listed as skipped, never followed.
 */
export async function walk(root: FileHandle, maxDepth: number, maxEntries: number): Promise<{ files: Found[]; skipped: Skipped[] }> {
  const files: Found[] = []
  const skipped: Skipped[] = []
  let seen = 0
  const visit = async (dir: FileHandle, prefix: string, depth: number): Promise<void> => {
    const entries = await readdir(`/proc/self/fd/${dir.fd}`, { withFileTypes: true })
    for (const e of entries) {
      const rel = prefix ? `${prefix}/${e.name}` : e.name
      if (++seen > maxEntries) {
        if (seen === maxEntries + 1) skipped.push({ rel, why: `more than ${maxEntries} entries in the mount; the rest were not looked at` })
        return
      }
      if (e.isDirectory()) {
        if (depth >= maxDepth) {
          skipped.push({ rel, why: `deeper than ${maxDepth} levels` })
          continue
        }
        const sub = await openOne(dir, e.name, false, null)
        if (!sub) continue
        try {
          await visit(sub, rel, depth + 1)
        } finally {
          await sub.close()
        }
      } else if (e.isFile()) {
        const stat = await lstat(at(dir, e.name)).catch(() => undefined)
        if (stat?.isFile()) files.push({ rel, stat })
      } else {
        skipped.push({ rel, why: e.isSymbolicLink() ? 'a symbolic link (only regular files are stored)' : 'not a regular file' })
      }
    }
  }
  await visit(root, '', 1)
  return { files, skipped }
}

/** The bytes of regular file `rel` beneath the mount, when it is one and at most `max` bytes; else why not. */
export async function readAt(root: FileHandle, rel: string, max: number): Promise<{ bytes: Buffer } | { why: string; size?: number }> {
  const segments = rel.split('/')
  const dir = await openDirAt(root, segments.slice(0, -1), false)
  if (!dir) return { why: 'gone' }
  try {
    const fh = await open(at(dir, segments.at(-1)!), FILE_FLAGS).catch((err: unknown) => {
      if (code(err) === 'ENOENT') return undefined
      if (code(err) === 'ELOOP') return 'link' as const
      throw err
    })
    if (fh === undefined) return { why: 'gone' }
    if (fh === 'link') return { why: 'a symbolic link (only regular files are stored)' }
    try {
      const st = await fh.stat()
      if (!st.isFile()) return { why: 'not a regular file' }
      if (st.size > max) return { why: 'too large', size: st.size }
      const bytes = await fh.readFile()
      return bytes.length > max ? { why: 'too large', size: bytes.length } : { bytes }
    } finally {
      await fh.close()
    }
  } finally {
    await dir.close()
  }
}

/**
 * Puts `content` at `rel` beneath the mount: written in full to `staging` (the server's, outside every sandbox's view,
 * on the same file system), handed to `owner`, then renamed over whatever held the name (a directory there is removed
 * first). The directories on the way are made as needed, never followed through a link.
 */
export async function writeAt(root: FileHandle, rel: string, content: string, o: { staging: string; owner: Owner; mode: number }): Promise<void> {
  const segments = rel.split('/')
  const dir = await openDirAt(root, segments.slice(0, -1), true, o.owner)
  try {
    await mkdir(o.staging, { recursive: true, mode: 0o700 })
    const tmp = path.join(o.staging, `${process.pid}-${Math.random().toString(36).slice(2)}`)
    const fh = await open(tmp, 'wx', o.mode)
    try {
      await fh.writeFile(content, 'utf8')
      await fh.chmod(o.mode)
      if (o.owner !== null) await fh.chown(o.owner, o.owner)
    } finally {
      await fh.close()
    }
    const dest = at(dir, segments.at(-1)!)
    try {
      await rename(tmp, dest)
    } catch (err) {
      const c = code(err)
      if (c !== 'EISDIR' && c !== 'ENOTEMPTY' && c !== 'EEXIST' && c !== 'ENOTDIR') {
        await rm(tmp, { force: true })
        throw err
      }
      await removeEntry(dir, segments.at(-1)!)
      await rename(tmp, dest)
    }
  } finally {
    await dir.close()
  }
}

/** Removes `rel` beneath the mount (a file, or whatever holds its name), then the directories that leaves empty. */
export async function removeAt(root: FileHandle, rel: string): Promise<void> {
  const segments = rel.split('/')
  const dir = await openDirAt(root, segments.slice(0, -1), false)
  if (!dir) return
  try {
    await removeEntry(dir, segments.at(-1)!)
  } finally {
    await dir.close()
  }
  for (let n = segments.length - 1; n > 0; n--) {
    const parent = await openDirAt(root, segments.slice(0, n - 1), false)
    if (!parent) return
    const emptied = await rmdir(at(parent, segments[n - 1]!)).then(
      () => true,
      () => false,
    )
    await parent.close()
    if (!emptied) return
  }
}
