import { type BigIntStats, constants as C, type Dir, type Dirent, type Stats } from 'node:fs'
import { type FileHandle, lstat, open, opendir, readlink } from 'node:fs/promises'

/**
 * How far one pass over a session's outputs folder looks. Past `entries` or `files` the pass stops (the rest waits for
 * the next pass); a directory deeper than `depth` or a path longer than `pathBytes` is skipped.
 */
export interface WalkBounds {
  /** Directory levels below the folder that are descended into. Default 16. */
  depth: number
  /** Directory entries looked at in one pass, of any kind. Default 10,000. */
  entries: number
  /** Regular files handed over in one pass. Default 1,000. */
  files: number
  /** Bytes of a path relative to the folder (it becomes the File's name). Default 1,024. */
  pathBytes: number
}

export const WALK_BOUNDS: WalkBounds = { depth: 16, entries: 10_000, files: 1_000, pathBytes: 1_024 }

/** A regular file of the folder, opened read-only and confirmed inside it. The walk closes it once `each` returns. */
export interface OutputFile {
  /** Its path relative to the folder, `/`-separated. */
  rel: string
  fh: FileHandle
  stat: BigIntStats
}

export interface WalkOptions {
  bounds?: WalkBounds
  /** Tests only: runs before each open, so a test can swap what is about to be opened. */
  beforeOpen?: (rel: string) => void | Promise<void>
}

/** Every open: never through a symlink (the last component; no other is a path we name), never blocking (a FIFO). */
const FLAGS = C.O_RDONLY | C.O_NOFOLLOW | C.O_NONBLOCK | C.O_NOCTTY
const DIR_FLAGS = FLAGS | C.O_DIRECTORY

/** Entry names as bytes, whatever they hold (node honours 'buffer' here; its types know only text encodings). */
const NAMES_AS_BYTES = 'buffer' as BufferEncoding
const utf8 = new TextDecoder('utf-8', { fatal: true })

/**
 * Walks the folder `root` (which the sandbox's agent controls, and may change while we look) and hands `each` every
 * regular file in it; `each` answers false to stop. What does not qualify is named to `skip` with the reason.
 *
 * No path the agent can change is ever resolved: every directory is held open by its descriptor and what is in it is
 * opened through that descriptor (`/proc/self/fd/<dir>/<name>`, openat's equivalent), with O_NOFOLLOW, so a
 * directory swapped for a symlink after it was listed is refused (ELOOP), and one swapped after it was opened is
 * still the one opened. Symlinks, FIFOs, sockets and devices are never opened (O_NONBLOCK covers one swapped in
 * between the listing and the open). Each file's descriptor must then say, through `/proc/self/fd/<fd>`, that it lies
 * inside the folder (a directory moved out of it while walked is refused), and be owned by the folder's owner (the
 * sandbox's uid: a hard link to another user's file is refused). Linux only: it needs /proc.
 *
 * `complete` is false when the pass stopped early or a directory could not be read: what it did not see may exist.
 */
export async function walkOutputs(
  root: string,
  each: (f: OutputFile) => Promise<boolean>,
  skip: (rel: string, why: string) => void,
  o: WalkOptions = {},
): Promise<{ complete: boolean }> {
  const bounds = o.bounds ?? WALK_BOUNDS
  let rootFh: FileHandle
  try {
    rootFh = await open(root, DIR_FLAGS)
  } catch (err) {
    if (codeOf(err) === 'ENOENT') return { complete: true }
    skip('.', await openFailure(root, err))
    return { complete: false }
  }
  let entries = 0
  let files = 0
  let complete = true
  try {
    const rootStat = await rootFh.stat({ bigint: true })
    const prefix = Buffer.concat([await fdPath(rootFh), Buffer.from('/')])
    const inside = (p: Buffer) => p.length > prefix.length && p.subarray(0, prefix.length).equals(prefix)

    /** Opens `name` in the directory `dir`, and checks what it got; undefined (and said why) when it does not qualify. */
    const openIn = async (dir: FileHandle, name: Buffer, rel: string, directory: boolean): Promise<{ fh: FileHandle; stat: BigIntStats } | undefined> => {
      await o.beforeOpen?.(rel)
      const at = Buffer.concat([Buffer.from(`/proc/self/fd/${dir.fd}/`), name])
      let fh: FileHandle
      try {
        fh = await open(at, directory ? DIR_FLAGS : FLAGS)
      } catch (err) {
        skip(rel, await openFailure(at, err))
        return undefined
      }
      let why: string
      try {
        const stat = await fh.stat({ bigint: true })
        const where = await fdPath(fh)
        if (directory ? !stat.isDirectory() : !stat.isFile()) why = kindOf(stat)
        else if (!inside(where)) why = `not inside the folder once opened (it is at ${where.toString()})`
        else if (stat.uid !== rootStat.uid) why = `owned by uid ${stat.uid}, not by the folder's owner (${rootStat.uid})`
        else return { fh, stat }
      } catch (err) {
        why = `cannot be examined (${codeOf(err) ?? String(err)})`
      }
      await fh.close()
      skip(rel, why)
      return undefined
    }

    const walkDir = async (dir: FileHandle, rel: string, depth: number): Promise<boolean> => {
      let listing: Dir
      try {
        listing = await opendir(`/proc/self/fd/${dir.fd}`, { encoding: NAMES_AS_BYTES, bufferSize: 64 })
      } catch (err) {
        complete = false
        skip(rel || '.', `the directory cannot be listed (${codeOf(err) ?? String(err)})`)
        return true
      }
      try {
        for (let e = await listing.read(); e; e = await listing.read()) {
          if (++entries > bounds.entries) {
            complete = false
            skip(rel || '.', `the pass stopped after ${bounds.entries} directory entries; the rest waits for the next`)
            return false
          }
          const name = e.name as unknown as Buffer
          let r: string
          try {
            r = rel ? `${rel}/${utf8.decode(name)}` : utf8.decode(name)
          } catch {
            skip(`${rel ? `${rel}/` : ''}${name.toString()}`, 'its name is not UTF-8')
            continue
          }
          if (Buffer.byteLength(r) > bounds.pathBytes) {
            skip(r, `its path is longer than ${bounds.pathBytes} bytes`)
            continue
          }
          if (e.isDirectory()) {
            if (depth >= bounds.depth) {
              skip(r, `deeper than ${bounds.depth} levels`)
              continue
            }
            const sub = await openIn(dir, name, r, true)
            if (!sub) {
              complete = false
              continue
            }
            try {
              if (!(await walkDir(sub.fh, r, depth + 1))) return false
            } finally {
              await sub.fh.close()
            }
            continue
          }
          if (!e.isFile()) {
            skip(r, kindOf(e))
            continue
          }
          if (files >= bounds.files) {
            complete = false
            skip(r, `the pass stopped after ${bounds.files} files; the rest waits for the next`)
            return false
          }
          const f = await openIn(dir, name, r, false)
          if (!f) continue
          files++
          try {
            if (!(await each({ rel: r, fh: f.fh, stat: f.stat }))) return false
          } finally {
            await f.fh.close()
          }
        }
        return true
      } finally {
        await listing.close().catch(() => undefined)
      }
    }

    await walkDir(rootFh, '', 0)
    return { complete }
  } finally {
    await rootFh.close()
  }
}

/**
 * Why an open failed, for the log: O_NOFOLLOW refuses a symlink with ELOOP, and with O_DIRECTORY too with ENOTDIR, so
 * for those what is there now is said instead (looked at without following it, and never opened).
 */
async function openFailure(at: string | Buffer, err: unknown): Promise<string> {
  const code = codeOf(err)
  if (code === 'ELOOP' || code === 'ENOTDIR') {
    const what = await lstat(at).then(kindOf, () => undefined)
    if (what) return what === 'a regular file' ? 'a regular file where a directory was' : what
  }
  return `cannot be opened (${code ?? String(err)})`
}

/** Where the kernel says an open descriptor's file is now. */
const fdPath = (fh: FileHandle): Promise<Buffer> => readlink(`/proc/self/fd/${fh.fd}`, { encoding: 'buffer' })

function kindOf(s: BigIntStats | Stats | Dirent): string {
  if (s.isSymbolicLink()) return 'a symbolic link'
  if (s.isDirectory()) return 'a directory'
  if (s.isFIFO()) return 'a FIFO'
  if (s.isSocket()) return 'a socket'
  if (s.isCharacterDevice() || s.isBlockDevice()) return 'a device'
  return s.isFile() ? 'a regular file' : 'not a regular file'
}

const codeOf = (err: unknown): string | undefined => (err as NodeJS.ErrnoException)?.code
