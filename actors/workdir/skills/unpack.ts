import { chmod, mkdir, open } from 'node:fs/promises'
import path from 'node:path'
import { Readable } from 'node:stream'
import JSZip from 'jszip'
import {
  SKILL_MAX_DIRECTORY_ENTRIES,
  SKILL_MAX_EXPANDED_BYTES,
  SKILL_MAX_FILES,
  SKILL_NAME_MAX_CHARS,
  SKILL_NAME_PATTERN,
} from '../../../protocol/skill-rules.js'

/** One skill's canonical zip to unpack into `dest` (made here; its parent exists). */
export interface UnpackTask {
  zip: Uint8Array
  /** The skill's name: the zip's one top-level directory, whose contents land in `dest`. */
  name: string
  dest: string
}

export interface Unpacked {
  files: number
  bytes: number
}

/** Whether `name` can be a skill's directory: a frontmatter name's characters, so one path segment, never `.` or `..`. */
export const isSkillDirName = (name: string): boolean => name.length <= SKILL_NAME_MAX_CHARS && SKILL_NAME_PATTERN.test(name)

const S_IFMT = 0o170000
const S_IFREG = 0o100000
const S_IFDIR = 0o040000
const S_IXANY = 0o111

/**
 * Unpacks a skill's canonical zip (gateway/skill-bundle.ts wrote it, validated) into `dest`: files mode 0444 (0555
 * where the entry's mode is executable, so a script runs as `./script.sh`), directories 0755, the caller's own. The bytes came from the store, which could hold anything, so they are checked again: every
 * entry a relative path beneath `<name>/` with no empty, `.` or `..` segment, regular files and directories only, at
 * most the bounds an upload is held to (files, entries, expanded bytes, counted as they inflate). A zip that breaks one
 * throws; what was written stays for the caller to remove. CPU-bound: it runs on a worker thread (unpack-pool.ts).
 */
export async function unpackSkill({ zip, name, dest }: UnpackTask): Promise<Unpacked> {
  if (!isSkillDirName(name)) throw new Error(`${JSON.stringify(name)} is not a skill's name`)
  const archive = await JSZip.loadAsync(zip, { createFolders: false })
  const entries = Object.values(archive.files)
  if (entries.length > SKILL_MAX_FILES + SKILL_MAX_DIRECTORY_ENTRIES) throw new Error(`the bundle has ${entries.length} entries`)
  const dirs = new Set<string>([dest])
  const dirMade = async (dir: string) => {
    if (dirs.has(dir)) return
    await dirMade(path.dirname(dir))
    await mkdir(dir, { mode: 0o755 }).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'EEXIST') throw err
    })
    await chmod(dir, 0o755)
    dirs.add(dir)
  }
  await mkdir(dest, { mode: 0o755 })
  await chmod(dest, 0o755)
  const out: Unpacked = { files: 0, bytes: 0 }
  for (const e of entries) {
    const raw = e.unsafeOriginalName ?? e.name
    const rel = beneath(name, raw.endsWith('/') ? raw.slice(0, -1) : raw)
    const type = typeof e.unixPermissions === 'number' ? e.unixPermissions & S_IFMT : 0
    if (e.dir) {
      if (type !== 0 && type !== S_IFDIR) throw new Error(`${JSON.stringify(raw)}: not a directory`)
      if (rel) await dirMade(path.join(dest, rel))
      continue
    }
    if (type !== 0 && type !== S_IFREG) throw new Error(`${JSON.stringify(raw)}: neither a regular file nor a directory`)
    if (!rel) throw new Error(`${JSON.stringify(raw)}: a file where the skill's directory is`)
    if (++out.files > SKILL_MAX_FILES) throw new Error(`the bundle has more than ${SKILL_MAX_FILES} files`)
    const file = path.join(dest, rel)
    await dirMade(path.dirname(file))
    // O_EXCL: a second entry of one path, or a path through something already there, fails rather than overwrites.
    const fh = await open(file, 'wx', 0o600)
    try {
      // jszip's stream is an old-style one: wrapped, it is read with back-pressure, so inflating stops where the count does.
      for await (const chunk of new Readable().wrap(e.nodeStream('nodebuffer')) as AsyncIterable<Buffer>) {
        out.bytes += chunk.length
        if (out.bytes > SKILL_MAX_EXPANDED_BYTES) throw new Error(`the bundle expands past ${SKILL_MAX_EXPANDED_BYTES} bytes`)
        for (let off = 0; off < chunk.length; ) off += (await fh.write(chunk, off)).bytesWritten
      }
      await fh.chmod(typeof e.unixPermissions === 'number' && e.unixPermissions & S_IXANY ? 0o555 : 0o444)
    } finally {
      await fh.close()
    }
  }
  return out
}

/** The part of a zip path beneath the skill's directory (`''` for the directory itself); throws for any other path. */
function beneath(name: string, zipPath: string): string {
  const parts = zipPath.split('/')
  if (parts[0] !== name || parts.some((p) => p === '' || p === '.' || p === '..' || p.includes('\\') || p.includes('\0'))) {
    throw new Error(`${JSON.stringify(zipPath)}: not a path beneath ${name}/`)
  }
  return parts.slice(1).join('/')
}
