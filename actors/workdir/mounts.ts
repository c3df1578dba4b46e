import { mkdir, open, readFile, rename, rm, rmdir, stat, writeFile } from 'node:fs/promises'
import path from 'node:path'
import type { Logger } from 'pino'
import { fileResources, type SessionResource, UPLOADS_ROOT } from '../../protocol/schemas/resource.js'
import type { SandboxKind } from '../../sandbox/index.js'
import { Placed } from './placed.js'
import { copyIdOf, type FileReader } from '../file/index.js'
import type { ToolResult } from '../../sandbox/types.js'

/** What the directory holds, by mount path relative to uploads/: the copy put there. Outside every sandbox's view. */
const MANIFEST = '.uploads.json'
/** Where a file is written before it is renamed into uploads/, so no tool ever sees half of one. */
const PARTIAL = '.uploads-partial'

/** A session's own host directory (the sandbox's, sandbox/isolated/layout.ts; the local backend's working directory). */
export const sessionDir = (dataDir: string, sessionId: string) => path.join(dataDir, 'sessions', sessionId)

/** Where a mount path's file is on the host, beneath the session's directory. */
const hostPath = (root: string, mountPath: string) => path.join(root, 'uploads', mountPath.slice(UPLOADS_ROOT.length + 1))

/**
 * The session's file resources on disk: each resource's copy streamed from the object store into
 * `<session dir>/uploads/<mount path beneath /mnt/session/uploads>`, which the isolated backend binds read-only at
 * /mnt/session/uploads (a new file shows there at once, the sandbox running or not). `ready` runs before every tool
 * run and does something only when the resources changed since it last did (the first tool of an actor, an add or a
 * delete since): files of resources gone are removed first, then the manifest names what is wanted, then what is
 * missing is written (temp name, then rename). A crash anywhere leaves a manifest naming every file that may be
 * there, so the next pass removes what is not wanted and writes what is not on disk.
 */
export class Mounts {
  private readonly placed: Placed

  constructor(
    private readonly session: string,
    private readonly root: string,
    private readonly files: FileReader,
    private readonly log: Logger,
  ) {
    this.placed = new Placed('files', UPLOADS_ROOT, session, log)
  }

  /**
   * `resources` (the session's, as of now) in place for the next tool; when that failed, the result to answer the tool
   * with instead of running it.
   */
  async ready(resources: readonly SessionResource[], signal?: AbortSignal): Promise<ToolResult | undefined> {
    const id = this.session
    const want = new Map(fileResources(resources).map((r) => [r.mount_path.slice(UPLOADS_ROOT.length + 1), copyIdOf(id, r.id)]))
    return this.placed.ready(want, signal, () => this.sync(want, signal))
  }

  private async sync(want: Map<string, string>, signal: AbortSignal | undefined): Promise<void> {
    const uploads = path.resolve(this.root, 'uploads')
    const manifest = path.join(this.root, MANIFEST)
    const had: Record<string, string> = await readFile(manifest, 'utf8').then(JSON.parse, () => ({}))
    // What is no longer wanted goes before anything arrives: a new path may lie where an old one's directory was.
    for (const [rel, copy] of Object.entries(had)) {
      if (want.get(rel) === copy) continue
      // Only what lies beneath uploads/: the manifest is a file on disk (the local backend's tools can write it).
      if (!path.resolve(uploads, rel).startsWith(`${uploads}${path.sep}`)) continue
      await rm(path.join(uploads, rel), { force: true, recursive: true })
      await pruneEmpty(uploads, path.dirname(rel))
    }
    await mkdir(uploads, { recursive: true, mode: 0o755 })
    await writeFile(`${manifest}.tmp`, JSON.stringify(Object.fromEntries(want)))
    await rename(`${manifest}.tmp`, manifest)
    for (const [rel, copy] of want) {
      const dest = path.join(uploads, rel)
      if (
        had[rel] === copy &&
        (await stat(dest).then(
          () => true,
          () => false,
        ))
      )
        continue
      await this.place(copy, dest, signal)
    }
  }

  /** Streams one copy to `dest`, a chunk at a time, readable by the sandbox's user and by nobody written to. */
  private async place(copy: string, dest: string, signal: AbortSignal | undefined): Promise<void> {
    const chunks = await this.files.read(copy)
    if (!chunks) {
      // Its copy was deleted through the Files API: the resource stays, without a file.
      this.log.warn({ session: this.session, copy }, 'a resource copy is gone; its file is not mounted')
      return
    }
    const partial = path.join(this.root, PARTIAL)
    await mkdir(partial, { recursive: true, mode: 0o700 })
    const tmp = path.join(partial, copy)
    const fh = await open(tmp, 'w', 0o444)
    try {
      for await (const chunk of chunks) {
        signal?.throwIfAborted()
        for (let off = 0; off < chunk.length; ) off += (await fh.write(chunk, off)).bytesWritten
      }
    } finally {
      await fh.close()
    }
    await mkdir(path.dirname(dest), { recursive: true, mode: 0o755 })
    await rename(tmp, dest)
  }
}

/** Removes the empty directories from `rel` up to (not including) `base`. */
async function pruneEmpty(base: string, rel: string): Promise<void> {
  for (let dir = rel; dir !== '.' && dir !== ''; dir = path.dirname(dir)) {
    if (
      !(await rmdir(path.join(base, dir)).then(
        () => true,
        () => false,
      ))
    )
      return
  }
}

/**
 * The system prompt a session's model gets. The local backend has no /mnt/session/uploads (its tools run on the host,
 * in the session's directory): the files are in the directory's uploads/, and the model is told where; the isolated
 * backend mounts them where their mount paths say, and the prompt is the agent's.
 */
export function systemWithFiles(system: string | null, resources: readonly SessionResource[], sandbox: SandboxKind, root: string): string | null {
  const files = fileResources(resources)
  if (sandbox !== 'local' || files.length === 0) return system
  const lines = files.map((r) => `- ${r.mount_path}: ${hostPath(root, r.mount_path)}`)
  const note = `This session's files (copies, not to be changed) are not under ${UPLOADS_ROOT} here but in ${path.join(root, 'uploads')}:\n${lines.join('\n')}`
  return system ? `${system}\n\n${note}` : note
}
