import { readFile, readdir, rm, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { setTimeout as delay } from 'node:timers/promises'
import { nuid } from '@nats-io/nats-core'
import type { Logger } from 'pino'
import { decode, encode } from '../../../protocol/codec.js'
import { SKILLS_DIR, sandboxDirs } from '../../../sandbox/isolated/layout.js'
import type { SandboxKind, ToolResult } from '../../../sandbox/index.js'
import { errorResult } from '../../../sandbox/types.js'
import { type Clock, FenceLost, isTransientNatsError, retry, workspaceRetry } from '../../kit/index.js'
import type { SandboxOwner } from '../port.js'
import { type Entry, type FileEntry, readAll, type Scan, sameEntry, WorkspaceDir } from './files.js'
import type { WorkspaceStore } from './store.js'
import { EMPTY, type Manifest, type Saved, unchanged, type WorkspaceBounds } from './manifest.js'
import { boundsNote, movedNote, noteOf, storeNote } from './notes.js'

/** What the workspaces of a host's sessions share. */
export interface WorkspaceContext {
  store: WorkspaceStore
  bounds: WorkspaceBounds
  log: Logger
}

interface Held {
  m: Manifest
  entries: Map<string, Saved>
  revision: number
  /** The blob holding the manifest's own bytes. */
  blob?: string
}

/** Files read into the store, or written back from it, at once. */
const PARALLEL = 8
/** Attempts at writing back one file whose chunks a replica may not have yet. */
const FILE_ATTEMPTS = 5

/** The tool call was interrupted while the workspace was restored, or the actor stops while it is saved. */
class Interrupted extends Error {}
const stopIfAborted = (signal: AbortSignal) => {
  if (signal.aborted) throw new Interrupted('interrupted')
}

/**
 * The workspace a session's tools work in, on this host: `<data dir>/sessions/<id>/workspace` under the isolated
 * backend, the session directory itself (without the session's other directories) under the local one. Its top-level
 * `skills` is never saved nor restored, whether the session has skills or not: it is where they are bound
 * (/workspace/skills, read-only; the directory beneath the bind is empty), and they come from their bundles.
 */
export function workspaceOf(kind: SandboxKind, workdir: string): WorkspaceDir {
  const dirs = sandboxDirs(workdir)
  if (kind === 'isolated') return new WorkspaceDir(dirs.workspace, new Set([SKILLS_DIR]))
  return new WorkspaceDir(workdir, new Set([dirs.uploads, dirs.outputs, dirs.tmp, dirs.run, dirs.skills].map((d) => path.basename(d))))
}

/**
 * A session's workspace kept in the store across moves between hosts (hosts share no disk). At the end of each tool
 * call it saves what changed (a manifest of path, type, size, mtime and mode, and the bytes of the files that changed);
 * before the first tool call of an activation it brings the directory here up to the stored manifest when it is missing
 * or older (a marker beside it, `<session dir>.workspace-gen`, says which save it holds). The first tool result after
 * such a restore says what the move lost, and so does a `session.error`; so do the results of saves that could not
 * be made (past the bounds, the store unavailable for long). docs/ARCHITECTURE.md "Sandboxes" says exactly what a move
 * keeps and what it loses.
 */
export class WorkspaceSync {
  private held: Held | undefined
  private ready: Promise<void> | undefined
  /** Restored from a save made elsewhere: the next tool result says what the move lost. */
  private moved: Manifest | undefined
  /** Said once until a save succeeds again: past the bounds, the store not answering, a restore that failed. */
  private readonly told = new Set<string>()
  private pending: string[] = []
  /** A restore that could not complete stops saving for this activation: a partial workspace must not replace a whole one. */
  private frozen = false
  /** The first save of an activation also removes blobs a save that never committed left (its host died midway). */
  private strays = true
  /** The manifest of a commit whose answer never came. */
  private attempt: { m: Manifest; entries: Map<string, Saved> } | undefined

  constructor(
    private readonly session: string,
    private readonly dir: WorkspaceDir,
    private readonly marker: string,
    private readonly mb: SandboxOwner,
    private readonly c: WorkspaceContext,
  ) {}

  /**
   * Runs one tool call between the restore it may need and the save after it. A restore that cannot reach the store is
   * the call's error result (nothing ran); notes for the model follow the tool's own result.
   */
  async around(signal: AbortSignal, run: () => Promise<ToolResult>): Promise<ToolResult> {
    try {
      await (this.ready ??= this.restore(signal))
    } catch (err) {
      this.ready = undefined
      if (err instanceof Interrupted) return errorResult('Interrupted while the workspace was being restored; the tool did not run.')
      if (!isTransientNatsError(err)) throw err
      return errorResult(
        `The session's workspace could not be restored: the store does not answer (${(err as Error).message}). The tool did not run; try again.`,
      )
    }
    // A restore that waited for the store may have outlasted this host's hold on the session.
    this.mb.checkServing('it starts no tool until it knows the session is still its own')
    const result = await run()
    const notes = await this.save(signal)
    return notes.length ? { ...result, content: [...result.content, ...notes.map(noteOf)] } : result
  }

  /** Session delete: everything stored of the workspace goes, and the marker here. */
  async remove(): Promise<void> {
    try {
      await retry(workspaceRetry, () => this.c.store.remove(this.session), { retryable: isTransientNatsError })
    } catch (err) {
      this.c.log.error({ session: this.session, err }, 'the workspace of a deleted session could not be removed from the store')
    }
    await rm(this.marker, { force: true })
  }

  // ------------------------------------------------------------------------------------------------- restore

  private async restore(signal: AbortSignal): Promise<void> {
    const t0 = performance.now()
    const stored = await this.retrying(signal, () => this.c.store.manifest(this.session))
    if (!stored) {
      this.held = { m: EMPTY, entries: new Map(), revision: 0 }
      return
    }
    let m: Manifest
    try {
      if (!stored.bytes) throw new Error(stored.unreadable)
      m = decode<Manifest>(stored.bytes)
      if (m.v !== 1 || !Array.isArray(m.entries)) throw new Error(`unknown manifest version ${String(m.v)}`)
    } catch (err) {
      this.c.log.error({ session: this.session, err }, 'the stored workspace manifest cannot be read; the workspace here is kept and saved over it')
      // Saves go on from a generation no earlier one reached (the meta's stream sequence is past every save's count),
      // so no host's marker of the lost lineage reads as current.
      this.held = { m: { ...EMPTY, gen: stored.revision }, entries: new Map(), revision: stored.revision, blob: stored.blob }
      this.tell('unreadable', `The saved copy of the workspace could not be read (${(err as Error).message}); the workspace on this host is used as it is.`)
      return
    }
    this.held = { m, entries: new Map(m.entries), revision: stored.revision, blob: stored.blob }
    if ((await this.readMarker()) === m.gen) return
    const { files, bytes, failed } = await this.reconcile(m, signal)
    if (failed.length) {
      this.frozen = true
      this.tell(
        'restore',
        `${failed.length} saved file(s) could not be restored (${failed.slice(0, 5).join(', ')}${failed.length > 5 ? ', …' : ''}); the workspace is not saved again until the session next starts on a host, so that nothing of the saved copy is lost.`,
      )
    } else await this.writeMarker(m.gen)
    this.moved = m
    this.c.log.info(
      { session: this.session, gen: m.gen, files, bytes, failed: failed.length, ms: Math.round(performance.now() - t0) },
      'workspace restored from the store',
    )
  }

  /** Makes the directory here what `m` says: removes what it lacks, writes back what differs. */
  private async reconcile(m: Manifest, signal: AbortSignal): Promise<{ files: number; bytes: number; failed: string[] }> {
    const want = new Map(m.entries.filter(([p]) => this.dir.owns(p)))
    let local = await this.dir.scan(this.c.bounds)
    if (local.over) {
      // Too large to compare: start from nothing.
      for (const name of await readdir(this.dir.root)) if (this.dir.owns(name)) await this.dir.remove(name)
      local = { entries: new Map(), bytes: 0 }
    }
    const removed = new Set<string>()
    for (const [p, e] of local.entries) {
      const w = want.get(p)
      if (w && w.t === e.t) continue
      await this.dir.remove(p)
      removed.add(p)
    }
    const have = (p: string): Entry | undefined => {
      for (let q = p; q !== '.'; q = path.posix.dirname(q)) if (removed.has(q)) return undefined
      return local.entries.get(p)
    }
    const sorted = [...want].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    for (const [p, e] of sorted) if (e.t === 'd' && !have(p)) await this.dir.makeDir(p)
    const failed: string[] = []
    let files = 0
    let bytes = 0
    await inParallel(
      sorted.filter(([p, e]) => e.t !== 'd' && !(have(p) && sameEntry(have(p)!, e))),
      async ([p, e]) => {
        stopIfAborted(signal)
        if (e.t === 'l') return this.dir.writeLink(p, e.target)
        if (e.t !== 'f') return
        for (let attempt = 1; ; attempt++) {
          try {
            await this.dir.writeFile(p, e, this.c.store.readBlob(this.session, e.blob))
            files++
            bytes += e.size
            return
          } catch (err) {
            if (attempt >= FILE_ATTEMPTS || signal.aborted) {
              this.c.log.warn({ session: this.session, path: p, err: (err as Error).message }, 'a saved file could not be restored')
              failed.push(p)
              return
            }
            await delay(100 * 2 ** attempt, undefined, { signal }).catch(() => undefined)
          }
        }
      },
    )
    for (const [p, e] of sorted.reverse()) {
      const h = have(p)
      if (e.t === 'd' && (!h || !sameEntry(h, e))) await this.dir.finishDir(p, e.mode)
    }
    return { files, bytes, failed }
  }

  // ---------------------------------------------------------------------------------------------------- save

  /** Saves what changed since the last save; the notes the model is owed. */
  private async save(signal: AbortSignal): Promise<string[]> {
    const notes = this.pending.splice(0)
    const moved = this.moved
    this.moved = undefined
    if (moved) notes.push(this.say(movedNote(moved)))
    if (!this.held || this.frozen) return notes
    const scan = await this.dir.scan(this.c.bounds)
    if (scan.over) {
      if (!this.told.has('bounds')) notes.push(this.say(boundsNote(scan, this.c.bounds, this.held.m)))
      this.told.add('bounds')
      return notes
    }
    try {
      await this.retrying(signal, (attempt) => this.commit(scan, attempt))
      this.told.clear()
    } catch (err) {
      // What the interrupted save did not store, the next tool call's save does.
      if (err instanceof Interrupted) return notes
      if (!isTransientNatsError(err)) throw err
      this.c.log.warn({ session: this.session, err: (err as Error).message }, 'the workspace could not be saved; the next tool call tries again')
      if (!this.told.has('store')) notes.push(this.say(storeNote(err as Error, this.held.m)))
      this.told.add('store')
    }
    return notes
  }

  /** One attempt at saving `scan`: uploads the files that changed, then commits the manifest at the revision held. */
  private async commit(scan: Scan, attempt: number): Promise<void> {
    const base = this.held!
    if (attempt > 1 && this.attempt) {
      // The previous attempt's commit got no answer: it may have landed.
      const now = await this.c.store.manifest(this.session)
      const landed = now?.bytes && decode<Manifest>(now.bytes).id === this.attempt.m.id
      if (landed) return this.adopt(this.attempt.m, this.attempt.entries, now.revision, now.blob)
      if ((now?.revision ?? 0) !== base.revision) throw new FenceLost(`session ${this.session}: its workspace was saved by another host`)
    }
    const entries = new Map<string, Saved>()
    const changed: Array<[string, FileEntry]> = []
    for (const [p, e] of scan.entries) {
      const old = base.entries.get(p)
      if (e.t !== 'f') entries.set(p, e)
      else if (old && sameEntry(old, e)) entries.set(p, old)
      else changed.push([p, e])
    }
    if (!changed.length && unchanged(entries, base.entries)) return
    this.mb.checkServing('it saves no workspace until it knows the session is still its own')
    const added: string[] = []
    try {
      await inParallel(changed, async ([p]) => {
        // An interrupted tool call is saved all the same (once, not retried); only an actor that stops gives up.
        if (this.mb.dead) throw new Interrupted('the actor stopped')
        const opened = await this.dir.openFile(p)
        // Gone or replaced since the scan: the next save finds it as it is then.
        if (!opened) return
        try {
          const blob = await this.c.store.putBlob(this.session, base.m.gen + 1, readAll(opened.fh, opened.entry.size))
          added.push(blob.id)
          entries.set(p, { ...opened.entry, size: blob.size, blob })
        } finally {
          await opened.fh.close()
        }
      })
    } catch (err) {
      await this.c.store.dropBlobs(this.session, added).catch(() => undefined)
      throw err
    }
    const m: Manifest = { v: 1, id: nuid.next(), gen: base.m.gen + 1, at: Date.now(), entries: [...entries].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)) }
    this.mb.alive()
    this.mb.checkServing('it saves no workspace until it knows the session is still its own')
    this.attempt = { m, entries }
    const { revision, blob } = await this.c.store.commit(this.session, m.gen, encode(m), base.revision)
    await this.adopt(m, entries, revision, blob)
  }

  /** A manifest is stored: what the one before named and this one does not goes, and the marker says which is here. */
  private async adopt(m: Manifest, entries: Map<string, Saved>, revision: number, blob: string): Promise<void> {
    const before = this.held!
    this.held = { m, entries, revision, blob }
    this.attempt = undefined
    await this.writeMarker(m.gen)
    const live = new Set([blob, ...[...entries.values()].flatMap((e) => (e.t === 'f' ? [e.blob.id] : []))])
    const gone = [...before.entries.values()].flatMap((e) => (e.t === 'f' && !live.has(e.blob.id) ? [e.blob.id] : []))
    if (before.blob) gone.push(before.blob)
    try {
      await this.c.store.dropBlobs(this.session, gone)
      if (this.strays) {
        this.strays = false
        await this.c.store.dropBlobs(this.session, await this.c.store.strays(this.session, m.gen, live))
      }
    } catch (err) {
      // Left for the session's delete, which removes every blob of it.
      this.c.log.warn({ session: this.session, err: (err as Error).message }, 'old workspace blobs could not be removed')
    }
  }

  // ------------------------------------------------------------------------------------------------- helpers

  /** `fn` again while the store is unavailable (workspaceRetry), unless the call is interrupted or the actor stops. */
  private retrying<T>(signal: AbortSignal, fn: (attempt: number) => Promise<T>): Promise<T> {
    const clock: Clock = { now: () => Date.now(), sleep: (ms) => delay(ms, undefined, { signal }).catch(() => undefined) }
    return retry(workspaceRetry, fn, { retryable: (err) => isTransientNatsError(err) && !signal.aborted && !this.mb.dead, clock })
  }

  /** A note for the model, also a `session.error` for the client (the turn goes on: retry_status retrying). */
  private say(text: string): string {
    this.mb.report(`Workspace: ${text}`)
    return text
  }

  /** A note said at the next tool result, once until a save succeeds. */
  private tell(kind: string, text: string): void {
    if (this.told.has(kind)) return
    this.told.add(kind)
    this.pending.push(text)
  }

  private async readMarker(): Promise<number | undefined> {
    const text = await readFile(this.marker, 'utf8').catch(() => undefined)
    const gen = text === undefined ? Number.NaN : Number(text)
    return Number.isInteger(gen) ? gen : undefined
  }

  private async writeMarker(gen: number): Promise<void> {
    await writeFile(this.marker, String(gen))
  }
}

/** Runs `fn` over `items`, PARALLEL at a time; the first failure is thrown once all started have settled. */
async function inParallel<T>(items: readonly T[], fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0
  let failure: unknown
  const worker = async () => {
    while (next < items.length && failure === undefined) {
      const item = items[next++]!
      await fn(item).catch((err) => (failure ??= err))
    }
  }
  await Promise.all(Array.from({ length: Math.min(PARALLEL, items.length) }, worker))
  if (failure !== undefined) throw failure
}
