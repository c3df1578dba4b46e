import type { FileHandle } from 'node:fs/promises'
import path from 'node:path'
import type { Logger } from 'pino'
import { contentSha256, MAX_CONTENT_BYTES, MAX_PATH_SEGMENTS, memoryContentProblem, memoryPathProblem } from '../../../protocol/memory-rules.js'
import { ApiError } from '../../../protocol/errors/api-error.js'
import type { MemoryApplied, MemoryEntry } from '../../../protocol/ops/memory.js'
import { MEMORY_ROOT } from '../../../protocol/schemas/resource.js'
import type { MemoryChange } from '../../../protocol/schemas/memory.js'
import { errorResult, type ToolResult } from '../../../sandbox/types.js'
import type { MemoryAccess } from './access.js'
import { type Found, openMount, type Owner, readAt, removeAt, walk, writeAt } from './files.js'

/** One memory store as a session's sandbox mounts it (`SandboxSpec.memory`): plain data, it crosses NATS. */
export interface MemoryMount {
  store: string
  /** Its directory beneath /mnt/memory (and the session directory's memory/). */
  slug: string
  access: 'read_write' | 'read_only'
  /** The store's name as the session snapshotted it, for what the tool result says. */
  name: string
}

/** Where memory files are written before they are renamed into a mount. Outside every sandbox's view. */
const STAGING = '.memory-partial'
/** Entries a walk of one mount looks at, at most (a store holds what its files hold; this bounds a runaway tool). */
const MAX_ENTRIES = 100_000
/** Memories read from the store and written at once while a mount is materialised. */
const READS_AT_ONCE = 32
/** The most content one `memories.apply` carries, and the most changes: larger batches go as several. */
const BATCH_BYTES = 1 << 20
const BATCH_CHANGES = 200

const fatal = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

/** What a file's `lstat` says that changes whenever its bytes may have: its hash is computed again only then. */
const statKey = (f: Found) => `${f.stat.ino}:${f.stat.size}:${f.stat.mtimeMs}:${f.stat.ctimeMs}`

/** One mount's state on this host, for this actor's life. */
interface MountState {
  /** The store's index token the mount was last brought to (`memories.index`). */
  token: string | undefined
  /** Every memory the mount holds as the store has it: relative path → content_sha256. */
  base: Map<string, string>
  /** Hashes of the files as last read: relative path → stat key and hash. */
  hashed: Map<string, { key: string; sha: string }>
  /** Files refused (not stored) as they were then, by stat key: said once, not again until they change. */
  refused: Map<string, string>
}

/**
 * A session's memory stores on disk (issue 42 point 4): each store's memories as files in
 * `<session dir>/memory/<slug>/`, which the isolated backend binds at /mnt/memory/<slug> (read-only for a `read_only`
 * mount). `ready` runs before each tool: it asks the store's owner for its index (only a token back when nothing
 * changed since the last look) and writes what differs; the first pass of an actor on a host compares every file with
 * the store, removing what the store does not hold, so a session that moved, or came back to a directory an earlier
 * activation left, gets its mounts as stored. `after` runs after each tool: a `read_write` mount's files are compared
 * with what it held (hashes kept by stat, so an unchanged file is not read again) and the differences go to the store
 * as `memories.apply` (puts, deletes, and a delete and a create of the same content as a rename), each a version by
 * the session; what is not stored is said in the tool's result.
 */
export class MemoryMounts {
  private readonly states = new Map<string, MountState>()

  constructor(
    private readonly session: string,
    private readonly root: string,
    private readonly access: MemoryAccess,
    private readonly log: Logger,
    /** The sandbox's host uid, owner of what a `read_write` mount holds; null: the server's own. */
    private readonly writer: Owner,
  ) {}

  /** `mounts` brought to the stores' contents for the next tool; when that failed, the result to answer it with. */
  async ready(mounts: readonly MemoryMount[], signal?: AbortSignal): Promise<ToolResult | undefined> {
    for (const m of mounts) {
      try {
        await this.sync(m, signal)
      } catch (err) {
        const why = signal?.aborted ? 'interrupted' : (err as Error).message
        this.log.warn({ session: this.session, store: m.store, err }, 'a memory store could not be put in place; the tool does not run')
        return errorResult(`The memory store ${m.name} could not be put in place under ${MEMORY_ROOT}/${m.slug} (${why}); the tool did not run. Try again.`)
      }
    }
    return undefined
  }

  /**
   * After a tool: each `read_write` mount's changes stored; `result` with a note appended when something was not
   * stored (or could not be, now: the next tool tries again).
   */
  async after(mounts: readonly MemoryMount[], result: ToolResult): Promise<ToolResult> {
    const notes: string[] = []
    for (const m of mounts) {
      if (m.access !== 'read_write') continue
      const st = this.states.get(m.store)
      // Never brought in place on this host (its pass failed): nothing here is the store's to compare with.
      if (!st || st.token === undefined) continue
      try {
        notes.push(...(await this.writeBack(m, st)))
      } catch (err) {
        this.log.warn({ session: this.session, store: m.store, err }, "a memory mount's changes were not stored; the next tool tries again")
        // Said as it is: a new activation (the session moved, or stepped down) puts the store's state back over the
        // mount, and a path the store changed meanwhile takes the store's content, so the retry is not certain.
        notes.push(
          `${MEMORY_ROOT}/${m.slug}: the changes could not be stored now (${(err as Error).message}); they are tried again after the next tool, unless the session moves to another host or the store changes those paths first: write them again if they matter`,
        )
      }
    }
    if (!notes.length) return result
    const text = `Memory: not everything written under ${MEMORY_ROOT} was stored:\n${notes.map((n) => `- ${n}`).join('\n')}`
    return { ...result, content: [...result.content, { type: 'text', text }] }
  }

  private state(store: string): MountState {
    let st = this.states.get(store)
    if (!st) this.states.set(store, (st = { token: undefined, base: new Map(), hashed: new Map(), refused: new Map() }))
    return st
  }

  private dir(m: MemoryMount): string {
    return path.join(this.root, 'memory', m.slug)
  }

  private owner(m: MemoryMount): Owner {
    return m.access === 'read_write' ? this.writer : null
  }

  private async sync(m: MemoryMount, signal: AbortSignal | undefined): Promise<void> {
    const st = this.state(m.store)
    const first = st.token === undefined
    const index = await this.access.index(m.store, st.token)
    if (!index.memories) return
    const want = new Map(index.memories.map((e) => [e.path.slice(1), e]))
    const root = await openMount(this.dir(m), this.owner(m))
    try {
      // The first pass trusts nothing on disk (another activation's leftovers): every file compared with the store.
      const onDisk = first ? await this.hashes(root, st) : new Map([...st.base].map(([rel, sha]) => [rel, sha] as const))
      for (const rel of onDisk.keys()) {
        if (want.has(rel)) continue
        await removeAt(root, rel)
        st.hashed.delete(rel)
        st.refused.delete(rel)
      }
      const missing = [...want.values()].filter((e) => onDisk.get(e.path.slice(1)) !== e.content_sha256)
      for (let i = 0; i < missing.length; i += READS_AT_ONCE) {
        signal?.throwIfAborted()
        const batch = missing.slice(i, i + READS_AT_ONCE)
        // Each file read and written on its own: one after the other, the writes' syscalls (a walk to the folder,
        // a staged file, a rename) made 1,000 memories take 1.2 s to put in place.
        await Promise.all(
          batch.map(async (e) => {
            const content = await this.contentOf(m.store, e)
            const rel = e.path.slice(1)
            await writeAt(root, rel, content, {
              staging: path.join(this.root, STAGING),
              owner: this.owner(m),
              mode: m.access === 'read_write' ? 0o644 : 0o444,
            })
            st.hashed.delete(rel)
            st.refused.delete(rel)
          }),
        )
      }
      st.base = new Map([...want].map(([rel, e]) => [rel, e.content_sha256]))
      st.token = index.token
    } finally {
      await root.close()
    }
  }

  private async contentOf(store: string, e: MemoryEntry): Promise<string> {
    const content = await this.access.content(store, e.memory_version_id)
    if (content === undefined) throw new Error(`the content of ${e.path} (version ${e.memory_version_id}) is not in the store`)
    return content
  }

  /** Every regular file's hash (an unreadable or oversized one hashes to nothing the store holds). */
  private async hashes(root: FileHandle, st: MountState): Promise<Map<string, string>> {
    const { files } = await walk(root, MAX_PATH_SEGMENTS, MAX_ENTRIES)
    const out = new Map<string, string>()
    for (const f of files) {
      const r = await this.hashOf(root, st, f)
      out.set(f.rel, 'sha' in r ? r.sha : '')
    }
    return out
  }

  /** A file's content and hash (the hash alone when its stat says it is as last read), or why it cannot be a memory. */
  private async hashOf(root: FileHandle, st: MountState, f: Found): Promise<{ sha: string; content?: string } | { why: string }> {
    const key = statKey(f)
    const known = st.hashed.get(f.rel)
    if (known?.key === key) return { sha: known.sha }
    if (f.stat.size > MAX_CONTENT_BYTES) return { why: `it is ${f.stat.size} bytes; a memory holds at most ${MAX_CONTENT_BYTES}` }
    const read = await readAt(root, f.rel, MAX_CONTENT_BYTES)
    // Gone since the walk (removed by something still running): nothing to say; the next pass finds it gone.
    if ('why' in read && read.why === 'gone') return { why: '' }
    if ('why' in read) return { why: read.size === undefined ? `it is ${read.why}` : `it is ${read.size} bytes; a memory holds at most ${MAX_CONTENT_BYTES}` }
    let content: string
    try {
      content = fatal.decode(read.bytes)
    } catch {
      return { why: 'it is not UTF-8 text' }
    }
    const sha = contentSha256(content)
    st.hashed.set(f.rel, { key, sha })
    return { sha, content }
  }

  /** One mount's changes since it was last in step with the store, stored; what was not stored, in words. */
  private async writeBack(m: MemoryMount, st: MountState): Promise<string[]> {
    const root = await openMount(this.dir(m), this.owner(m))
    const notes: string[] = []
    const refuse = (rel: string, key: string, why: string) => {
      st.refused.set(rel, key)
      notes.push(`${MEMORY_ROOT}/${m.slug}/${rel}: not stored: ${why}`)
    }
    try {
      const { files, skipped } = await walk(root, MAX_PATH_SEGMENTS, MAX_ENTRIES)
      for (const s of skipped) {
        if (st.refused.get(s.rel) === s.why) continue
        st.refused.set(s.rel, s.why)
        notes.push(`${MEMORY_ROOT}/${m.slug}/${s.rel}: not stored: ${s.why}`)
      }
      const present = new Set<string>()
      const puts: Array<{ rel: string; key: string; sha: string; content: string }> = []
      for (const f of files) {
        present.add(f.rel)
        const key = statKey(f)
        if (st.refused.get(f.rel) === key) continue
        const hashed = await this.hashOf(root, st, f)
        if ('why' in hashed) {
          if (hashed.why) refuse(f.rel, key, hashed.why)
          continue
        }
        if (st.base.get(f.rel) === hashed.sha) continue
        const why = memoryPathProblem(`/${f.rel}`)
        if (why) {
          refuse(f.rel, key, `its path ${why}`)
          continue
        }
        const content = hashed.content ?? (await this.reread(root, f))
        if (content === undefined) continue
        const bad = memoryContentProblem(content)
        if (bad) {
          refuse(f.rel, key, `its content ${bad}`)
          continue
        }
        puts.push({ rel: f.rel, key, sha: hashed.sha, content })
      }
      const gone = [...st.base.keys()].filter((rel) => !present.has(rel))
      const changes = pairRenames(gone, puts, st.base)
      if (!changes.length) return notes
      for (const batch of batches(changes)) {
        const res = await this.access
          .apply(
            m.store,
            this.session,
            batch.map((c) => c.change),
          )
          .catch((err: unknown) => {
            // The store refuses the whole batch (archived since: its memories are read-only): each change is refused
            // with that, said once, rather than sent again after every tool.
            if (!(err instanceof ApiError) || err.status >= 500) throw err
            return { results: batch.map((c): MemoryApplied => ({ ok: false, path: `/${c.rel}`, code: err.reason ?? 'refused', message: err.message })) }
          })
        for (const [i, r] of res.results.entries()) {
          const c = batch[i]!
          if (r.ok) {
            if (c.from !== undefined) st.base.delete(c.from)
            if (r.memory) st.base.set(c.rel, r.memory.content_sha256)
            else st.base.delete(c.rel)
            continue
          }
          // A refused rename leaves its old path in `base`: the memory there is deleted by the next tool's pass, as a
          // file removed (the new file stays refused until it changes).
          refuse(c.rel, c.key ?? '', r.message)
        }
        // Nobody else wrote in between: the mount is in step with the store's newest state, no index needed.
        if ('before' in res && res.before === st.token) st.token = res.after
      }
      return notes
    } finally {
      await root.close()
    }
  }

  /** A file whose hash was known but whose content is needed (it changed since the store last had it). */
  private async reread(root: FileHandle, f: Found): Promise<string | undefined> {
    const read = await readAt(root, f.rel, MAX_CONTENT_BYTES)
    if ('why' in read) return undefined
    try {
      return fatal.decode(read.bytes)
    } catch {
      return undefined
    }
  }
}

/** One change to send, and what it means for the mount's state. */
interface Pending {
  change: MemoryChange
  rel: string
  /** A rename's old path. */
  from?: string
  /** The file's stat key when it was read (a refusal is remembered by it). */
  key?: string
}

/**
 * Deletes and creates as changes: a file gone whose content reappears at a path new to the store is one rename (its
 * memory keeps its id and history), the rest puts and deletes.
 */
function pairRenames(
  gone: readonly string[],
  puts: ReadonlyArray<{ rel: string; key: string; sha: string; content: string }>,
  base: ReadonlyMap<string, string>,
): Pending[] {
  const goneBySha = new Map<string, string[]>()
  for (const rel of gone) {
    const sha = base.get(rel)!
    goneBySha.set(sha, [...(goneBySha.get(sha) ?? []), rel])
  }
  const out: Pending[] = []
  for (const p of puts) {
    const from = base.has(p.rel) ? undefined : goneBySha.get(p.sha)?.shift()
    if (from !== undefined) out.push({ change: { type: 'rename', from: `/${from}`, to: `/${p.rel}` }, rel: p.rel, from, key: p.key })
    else out.push({ change: { type: 'put', path: `/${p.rel}`, content: p.content }, rel: p.rel, key: p.key })
  }
  // Deletes first: a path freed by one may be where a put goes (a file replaced by a directory of the same name).
  const deletes: Pending[] = [...goneBySha.values()].flat().map((rel) => ({ change: { type: 'delete', path: `/${rel}` }, rel }))
  return [...deletes, ...out]
}

/** Changes in batches of at most BATCH_CHANGES and about BATCH_BYTES of content (a single change may exceed it). */
function* batches(changes: readonly Pending[]): Generator<Pending[]> {
  let cur: Pending[] = []
  let bytes = 0
  for (const c of changes) {
    const size = c.change.type === 'put' ? Buffer.byteLength(c.change.content) : 0
    if (cur.length && (cur.length >= BATCH_CHANGES || bytes + size > BATCH_BYTES)) {
      yield cur
      cur = []
      bytes = 0
    }
    cur.push(c)
    bytes += size
  }
  if (cur.length) yield cur
}
