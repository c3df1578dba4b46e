import { randomUUID } from 'node:crypto'
import { mkdir, readdir, readFile, rename, rm, rmdir, stat, writeFile } from 'node:fs/promises'
import path from 'node:path'
import type { Logger } from 'pino'
import { INSIDE } from '../../../sandbox/isolated/layout.js'
import type { ToolResult } from '../../../sandbox/types.js'
import { Placed } from '../placed.js'
import { unpackOffThread } from './unpack-pool.js'
import { isId } from '../../../protocol/ids.js'
import { isSkillDirName, type Unpacked, type UnpackTask } from './unpack.js'

/** What skills/ may hold, as pairs of name and bundle object. Outside every sandbox's view. */
const MANIFEST = '.skills.json'
/** Where a bundle is unpacked before its directory is renamed into skills/, so no tool ever sees half of one. */
const PARTIAL = '.skills-partial'

/** One skill as its sandbox needs it (`SandboxSpec.skills`): its directory's name and the object holding its zip. */
export interface SkillMount {
  name: string
  /** The version's canonical zip in `troupe_skill_bundles`. */
  object: string
  /** Its directory beneath skills/ when not its name: a roster member's, `.agents/<agent id>/<name>` (threads). */
  dir?: string
}

/** Where roster members' skills go beneath skills/, each member's in a directory named by its agent id. */
const MEMBERS = '.agents'

/** Whether `dir` is where skill `name` may go: its name, or `.agents/<agent id>/<name>`. */
function isSkillPath(dir: string, name: string): boolean {
  if (!isSkillDirName(name)) return false
  const parts = dir.split('/')
  if (parts.length === 1) return dir === name
  return parts.length === 3 && parts[0] === MEMBERS && isId('agent', parts[1]!) && parts[2] === name
}

/** Reads a bundle's bytes (actors/file/bytes.ts over `troupe_skill_bundles`); undefined when the object is gone. */
export interface SkillBundles {
  read(object: string): Promise<AsyncIterable<Uint8Array> | undefined>
}

/** Unpacks one bundle (default: on the unpack pool's worker thread). */
export type Unpack = (task: UnpackTask, signal?: AbortSignal) => Promise<Unpacked>

/**
 * The session's custom skills on disk: each skill's canonical zip, read from the bundles' object store, unpacked into
 * `<session dir>/skills/<name>/` (files 0444, 0555 where executable, directories 0755, the server's), which the isolated backend binds
 * read-only at /workspace/skills. Skills are fixed for a session's life, so in practice one pass per host, and a
 * comparison afterwards. A pass removes what a crash left half unpacked, and whatever skills/ holds that the manifest
 * does not name as wanted, then writes the manifest of what is wanted, then unpacks each missing skill into
 * `.skills-partial/<pass>/<name>` (off the event loop) and renames it into place: a skill's directory is there whole
 * or not at all, so the next pass after a crash finishes the job. skills/ is the server's alone (read-only to every tool), so
 * nothing the agent plants is met here.
 */
export class SkillMounts {
  private readonly placed: Placed

  constructor(
    private readonly session: string,
    private readonly root: string,
    private readonly bundles: SkillBundles,
    private readonly log: Logger,
    private readonly unpack: Unpack = unpackOffThread,
  ) {
    this.placed = new Placed('skills', INSIDE.skills, session, log)
  }

  /** `skills` in place for the next tool; when that failed, the result to answer the tool with instead of running it. */
  async ready(skills: readonly SkillMount[], signal?: AbortSignal): Promise<ToolResult | undefined> {
    // Skills are fixed for a session's life: one without any has nothing here, not even an empty skills/.
    if (skills.length === 0) return undefined
    const want = new Map(skills.map((s) => [s.dir ?? s.name, s.object]))
    return this.placed.ready(want, signal, async () => {
      const bad = skills.find((s) => !isSkillPath(s.dir ?? s.name, s.name))
      if (bad !== undefined) throw new Error(`${JSON.stringify(bad.dir ?? bad.name)} is not a skill's place`)
      await this.sync(want, signal)
    })
  }

  private async sync(want: Map<string, string>, signal: AbortSignal | undefined): Promise<void> {
    const skills = path.join(this.root, 'skills')
    const manifest = path.join(this.root, MANIFEST)
    const partial = path.join(this.root, PARTIAL)
    // This pass's own, so a pass of an earlier activation still winding down (a sandbox host ends its binding without
    // waiting) never unpacks into the same directory.
    const mine = path.join(partial, randomUUID())
    const had = new Map(await readFile(manifest, 'utf8').then(pairsOf, () => []))
    await rm(partial, { recursive: true, force: true })
    await mkdir(skills, { recursive: true, mode: 0o755 })
    // What is not wanted as it is goes before the manifest names the new set: a skill's name may come back as another object.
    const keep = (rel: string) => want.has(rel) && had.get(rel) === want.get(rel)
    for (const name of await readdir(skills)) {
      if (name === MEMBERS && [...want.keys()].some((rel) => rel.startsWith(`${MEMBERS}/`))) {
        await prune(path.join(skills, MEMBERS), MEMBERS, keep, 2)
        continue
      }
      if (keep(name)) continue
      await rm(path.join(skills, name), { recursive: true, force: true })
    }
    await writeFile(`${manifest}.tmp`, JSON.stringify([...want]))
    await rename(`${manifest}.tmp`, manifest)
    for (const [rel, object] of want) {
      const dest = path.join(skills, rel)
      const name = path.basename(rel)
      if (
        await stat(dest).then(
          () => true,
          () => false,
        )
      )
        continue
      signal?.throwIfAborted()
      const started = performance.now()
      const zip = await this.fetch(object, signal)
      await mkdir(mine, { recursive: true, mode: 0o700 })
      const done = await this.unpack({ zip, name, dest: path.join(mine, name) }, signal)
      await mkdir(path.dirname(dest), { recursive: true, mode: 0o755 })
      await rename(path.join(mine, name), dest)
      this.log.info({ session: this.session, skill: rel, ...done, ms: Math.round(performance.now() - started) }, 'skill unpacked')
    }
    await rm(mine, { recursive: true, force: true })
    await rmdir(partial).catch(() => undefined)
  }

  /** The bundle's bytes, whole, in one buffer of their own (moved to the unpacking thread). */
  private async fetch(object: string, signal: AbortSignal | undefined): Promise<Uint8Array> {
    const chunks = await this.bundles.read(object)
    if (!chunks) throw new Error(`the bundle ${object} is not in the store`)
    const parts: Uint8Array[] = []
    let size = 0
    for await (const chunk of chunks) {
      signal?.throwIfAborted()
      parts.push(chunk)
      size += chunk.length
    }
    const zip = new Uint8Array(size)
    let off = 0
    for (const p of parts) {
      zip.set(p, off)
      off += p.length
    }
    return zip
  }
}

/**
 * Removes what `dir` (`rel` beneath skills/) holds that `keep` does not keep, `depth` levels down (`.agents/<agent>/<name>`),
 * and the member directories that leaves empty.
 */
async function prune(dir: string, rel: string, keep: (rel: string) => boolean, depth: number): Promise<void> {
  for (const name of await readdir(dir)) {
    const child = `${rel}/${name}`
    if (depth > 1) await prune(path.join(dir, name), child, keep, depth - 1)
    else if (!keep(child)) await rm(path.join(dir, name), { recursive: true, force: true })
  }
  if (depth === 1) await rmdir(dir).catch(() => undefined)
}

/** The manifest's pairs; none when it is not what this writes. */
function pairsOf(text: string): Array<[string, string]> {
  const v: unknown = JSON.parse(text)
  if (!Array.isArray(v)) return []
  return v.filter((p): p is [string, string] => Array.isArray(p) && typeof p[0] === 'string' && typeof p[1] === 'string')
}
