import { existsSync } from 'node:fs'
import path from 'node:path'
import type { KV } from '@nats-io/kv'
import { lookup as mimeTypeOf } from 'mime-types'
import type { Logger } from 'pino'
import { isApiError } from '../../../protocol/errors/api-error.js'
import type { FileBytes } from '../../../protocol/files.js'
import { FileKind } from '../../../protocol/ops/file.js'
import { type ActorClient, casLoop, FenceLost, LOST, NotServing, RecordStore, type Versioned } from '../../kit/index.js'
import type { SandboxOwner } from '../port.js'
import { sessionDir } from '../mounts.js'
import { bytesOf, hashOf } from './read.js'
import { identityOf, type OutputsState, outputFileId, outputsKey, type PublishedOutput } from './state.js'
import { type OutputFile, type WalkOptions, walkOutputs } from './walk.js'

/** Bytes of new or changed files one pass reads and publishes (at least the largest file); the rest waits for the next. */
export const PASS_BYTES = 1024 ** 3

/** Skipped paths named in a pass's log line; the count says how many more. */
const SKIPS_LOGGED = 20

export interface SessionOutputsOptions {
  /** `troupe_session_outputs` (state.ts). */
  kv: KV
  bytes: FileBytes
  client: ActorClient
  log: Logger
  /** A session's folder is `<dataDir>/sessions/<id>/outputs`, on either sandbox backend. */
  dataDir: string
  /** The largest file published (`TROUPE_FILE_MAX_MIB`, as for uploads). */
  maxFileBytes: number
  /** Walk bounds (default WALK_BOUNDS) and test hooks. */
  walk?: WalkOptions
}

/** Session outputs on one host: the publisher of each session actor, and what a session's delete removes. */
export class SessionOutputs {
  private readonly store: RecordStore<OutputsState>

  constructor(private readonly o: SessionOutputsOptions) {
    this.store = new RecordStore(o.kv)
  }

  publisher(session: string, mb: Pick<SandboxOwner, 'dead' | 'checkServing' | 'report'>): OutputPublisher {
    return new OutputPublisher(this.o, this.store, session, mb)
  }

  /** A deleted session's record of what it published goes; the Files themselves stay (the client's to delete). */
  async forget(session: string): Promise<void> {
    await this.o.kv.delete(outputsKey(session)).catch((err: unknown) => this.o.log.warn({ err, session }, 'session outputs record not deleted'))
  }
}

/**
 * Publishes the regular files of one session's outputs folder as Files scoped to the session: each new or changed
 * file as a new File (the older Files of the same path stay), named by its path relative to the folder. Run at the
 * end of every turn, before the session goes idle (TurnLoop.end). What the walk refuses (walk.ts) is named in
 * the pass's log line; a failure to store one file is logged and tried again at the next pass; neither ends the turn.
 */
export class OutputPublisher {
  /** The stored record as last read or written; null: none stored; undefined: not read yet. */
  private state: Versioned<OutputsState> | null | undefined
  /** Files (path and identity) the session was told were too large, so that it is told once for each. */
  private readonly toldTooLarge = new Set<string>()

  constructor(
    private readonly o: SessionOutputsOptions,
    private readonly store: RecordStore<OutputsState>,
    private readonly session: string,
    private readonly mb: Pick<SandboxOwner, 'dead' | 'checkServing' | 'report'>,
  ) {}

  /**
   * Whether there is a folder to pass over: a session that never ran a tool on this host has none. Synchronous, so
   * a turn without tools ends without yielding, and its last events and its idle status are stored as one write.
   */
  hasFolder(): boolean {
    return existsSync(this.folder())
  }

  private folder(): string {
    return path.join(sessionDir(this.o.dataDir, this.session), 'outputs')
  }

  /** One pass over the folder. Throws only when the host no longer serves the session (the actor steps down). */
  async publish(): Promise<void> {
    const started = Date.now()
    const pass = { published: 0, unchanged: 0, bytes: 0, skipped: [] as Array<{ path: string; why: string }>, failed: 0 }
    const changes = new Map<string, PublishedOutput>()
    const seen = new Set<string>()
    let budget = Math.max(PASS_BYTES, this.o.maxFileBytes)
    const alive = () => !this.mb.dead
    const skip = (rel: string, why: string) => void pass.skipped.push({ path: rel, why })

    const each = async (f: OutputFile): Promise<boolean> => {
      if (!alive()) return false
      seen.add(f.rel)
      const prev = (await this.load()).files[f.rel]
      if (prev && prev.identity === identityOf(f.stat)) {
        pass.unchanged++
        return true
      }
      const size = Number(f.stat.size)
      // What it occupies on disk, or its length when larger: a sparse file is published at its full length.
      const weight = Math.max(size, Number(f.stat.blocks) * 512)
      if (weight > this.o.maxFileBytes) {
        skip(f.rel, `larger than the limit of ${this.o.maxFileBytes} bytes (TROUPE_FILE_MAX_MIB)`)
        this.tellTooLarge(f, weight)
        return true
      }
      if (size > budget) {
        skip(f.rel, 'this pass read its limit of bytes; the file waits for the next')
        return true
      }
      budget -= size
      const sha = await hashOf(f.fh, size, alive)
      if (sha === undefined) {
        if (alive()) skip(f.rel, 'it shrank while being read; it waits for the next pass')
        return alive()
      }
      const identity = identityOf(f.stat, started)
      if (prev?.sha256 === sha) {
        // Touched, or rewritten with the same bytes: nothing new to publish.
        changes.set(f.rel, { ...prev, identity })
        pass.unchanged++
        return true
      }
      const n = (prev?.n ?? 0) + 1
      const id = outputFileId(this.session, f.rel, n, sha)
      try {
        await this.publishOne(f, id, size, sha)
      } catch (err) {
        if (err instanceof NotServing || err instanceof FenceLost || !alive()) throw err
        pass.failed++
        this.o.log.warn({ err, session: this.session, path: f.rel, file: id }, 'session output not published; it is tried again at the next pass')
        return true
      }
      changes.set(f.rel, { file_id: id, sha256: sha, n, identity })
      pass.published++
      pass.bytes += size
      return true
    }

    try {
      const walk = await walkOutputs(this.folder(), each, skip, this.o.walk)
      await this.save(changes, walk.complete ? seen : undefined)
    } catch (err) {
      if (err instanceof NotServing || err instanceof FenceLost) throw err
      if (!alive()) return
      this.o.log.warn({ err, session: this.session }, 'publishing session outputs failed; the next pass tries again')
      return
    }
    if (pass.published || pass.failed || pass.skipped.length) {
      this.o.log.info(
        {
          session: this.session,
          published: pass.published,
          unchanged: pass.unchanged,
          failed: pass.failed,
          bytes: pass.bytes,
          skipped: pass.skipped.slice(0, SKIPS_LOGGED),
          skipped_count: pass.skipped.length,
          duration_ms: Date.now() - started,
        },
        pass.skipped.length ? 'session outputs published; some paths do not qualify' : 'session outputs published',
      )
    }
  }

  /** Tells the session, once for each version of a file, that it is too large to be published. */
  private tellTooLarge(f: OutputFile, weight: number): void {
    const key = `${f.rel}\0${identityOf(f.stat)}`
    if (this.toldTooLarge.has(key)) return
    this.toldTooLarge.add(key)
    this.mb.report(
      `The session output ${f.rel} (${weight} bytes) was not published as a File: a session output may be at most ${this.o.maxFileBytes} bytes (TROUPE_FILE_MAX_MIB).`,
    )
  }

  /**
   * Stores the bytes under `id`, then records the File. Nothing needs storing first: `id` is derived from what is
   * published, so a repeat after a crash (the state not yet saved) finds the record its first attempt wrote, or
   * stores the same bytes over the same object (bytes without a record are swept: actors/file/sweep.ts).
   */
  private async publishOne(f: OutputFile, id: string, size: number, sha256: string): Promise<void> {
    this.mb.checkServing('it publishes no session output until it knows the session is still its own')
    if (await this.recorded(id)) return
    await this.o.bytes.put(
      id,
      bytesOf(f.fh, size, sha256, () => !this.mb.dead),
    )
    await this.o.client.call(FileKind.ops.create, {
      body: { id, filename: f.rel, mime_type: mimeTypeOf(f.rel) || 'application/octet-stream', size_bytes: size, scope_id: this.session },
    })
  }

  private async recorded(id: string): Promise<boolean> {
    try {
      await this.o.client.call(FileKind.ops.get, { id })
      return true
    } catch (err) {
      if (isApiError(err) && err.status === 404) return false
      throw err
    }
  }

  private async load(): Promise<OutputsState> {
    if (this.state === undefined) this.state = (await this.store.get(outputsKey(this.session))) ?? null
    return this.state?.value ?? { files: {} }
  }

  /**
   * Records what the pass published or found unchanged. `seen`: every file of a walk that saw the whole folder, so
   * paths no longer there are dropped (the record stays as small as the folder).
   */
  private async save(changes: Map<string, PublishedOutput>, seen: Set<string> | undefined): Promise<void> {
    const stale = (s: OutputsState) => (seen && this.state ? Object.keys(s.files).filter((p) => !seen.has(p)) : [])
    if (!changes.size && !(this.state && stale(this.state.value).length)) return
    this.mb.checkServing('it records no session output until it knows the session is still its own')
    const key = outputsKey(this.session)
    await casLoop(async () => {
      const cur = await this.load()
      const files = { ...cur.files }
      for (const p of stale(cur)) delete files[p]
      for (const [p, v] of changes) files[p] = v
      const next: OutputsState = { files }
      const rev = this.state ? await this.store.update(key, next, this.state.revision) : await this.store.create(key, next)
      if (rev === false) {
        // Another host wrote it (this session's owner before a takeover): read it again and apply ours over it.
        this.state = undefined
        return LOST
      }
      this.state = { value: next, revision: rev }
    })
  }
}
