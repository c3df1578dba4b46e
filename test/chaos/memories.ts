// Memory stores under faults (issue 42 point 7): two stores shared by API writers and by sessions that mount both
// read_write, written all through the run through the balancer, so hosts die mid-write on the store's owner, on the
// gateway and under a session's tool. Every write carries content of its own (a unique tag), so its versions can be
// found by `content_sha256` at the end: memory-checks.ts holds what they must show (every acknowledged write one
// version, none doubled, every memory's state its latest version, no precondition won twice).
import { createHash } from 'node:crypto'
import Anthropic from '@anthropic-ai/sdk'
import { substream } from './rng.js'
import { oneTurn, toolResults, type TurnOutcome } from './turn.js'

/** The churn's client name: its precondition races are refused 409 by design (excused from the 4xx check). */
export const MEMORY_CLIENT = 'memory'

const STORES = ['chaos-mem-a', 'chaos-mem-b']
/** Paths every writer (API and sessions) writes in both stores. */
const SHARED_PATHS = ['/shared/notes.md', '/shared/todo.md', '/team/plan.md', '/team/deep/log.md']
const SESSIONS = 3
const API_WRITERS = 2
const API_EVERY_MS = 300
const RACE_EVERY_MS = 700
/** Every this many API writes one creates a memory at a path of its own (keyed: retried safely). */
const CREATE_EVERY = 5
/** Of a session's writes, the share that goes to a path of its own (a create) rather than a shared one. */
const SESSION_OWN_PATH = 0.25
/** A session turn's bound before its write counts as of unknown outcome. */
const TURN_MS = 40_000
/** How long the end waits for the memory sessions to be idle (a write-back still running would be missed). */
const SETTLE_MS = 60_000

export type MemWriteKind = 'seed' | 'api-update' | 'api-create' | 'race' | 'session'
/**
 * acknowledged: 2xx, or the session's tool result ok without a note that the write was not stored; refused: a 4xx
 * (nothing may be stored), or the tool result saying the store refused the file; unknown: a 5xx, a timeout, no answer,
 * a tool cut off or its changes not stored yet (stored at most once).
 */
export type MemOutcome = 'acknowledged' | 'refused' | 'unknown'

export interface MemWrite {
  kind: MemWriteKind
  store: string
  path: string
  /** The memory written, when the writer knew it (updates). */
  memoryId?: string
  tag: string
  /** SHA-256 of the content written (what its version must carry). */
  sha: string
  outcome: MemOutcome
  why?: string
  /** The session that wrote it (kind `session`). */
  session?: string
  /** A precondition race's: the `content_sha256` it required, and the pair it belongs to. */
  base?: string
  pair?: number
  at: number
}

export interface MemoryRead {
  store: string
  id: string
  path: string
  sha: string
  versionId: string
}

export interface VersionRead {
  store: string
  id: string
  memory_id: string
  operation: string
  sha: string | null
  created_at: string
  created_by: { type: string; session_id?: string } | undefined
  path: string | null | undefined
}

export interface MemoryData {
  stores: string[]
  sessions: string[]
  writes: MemWrite[]
  /** Every memory of the stores as GET answered it at the end. */
  memories: MemoryRead[]
  /** Every version of the stores, in the order the list gave (newest first). */
  versions: VersionRead[]
  /** What could not be read back at the end (each fails the checks: nothing can be judged without it). */
  readErrors: string[]
}

export const sha256 = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex')
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** What a failed API write's error says about its outcome: a 4xx stored nothing; anything else may have. */
function failed(err: unknown): { outcome: MemOutcome; why: string } {
  if (err instanceof Anthropic.APIError && err.status !== undefined) {
    const type = (err.error as { error?: { type?: string } } | undefined)?.error?.type
    return { outcome: err.status < 500 ? 'refused' : 'unknown', why: `${err.status}${type ? ` ${type}` : ''}` }
  }
  return { outcome: 'unknown', why: (err as Error).message.slice(0, 120) }
}

export class MemoryChurn {
  readonly writes: MemWrite[] = []
  private readonly stores: string[] = []
  private readonly sessions: Array<{ id: string; slugs: Map<string, string> }> = []
  /** Memory ids by store and path, as the writers learnt them. */
  private readonly ids = new Map<string, string>()
  private runId = ''
  private seed = 1
  private pairs = 0

  /**
   * `once`: single attempts (no client retries), so each write's outcome is its one answer's; `client`: a patient
   * client for reads, keyed creates and sends. Both through the balancer as `MEMORY_CLIENT`.
   */
  constructor(
    private readonly client: Anthropic,
    private readonly once: Anthropic,
  ) {}

  private idOf(store: string, path: string) {
    return this.ids.get(`${store}\n${path}`)
  }

  /** The stores, their first memories, and the sessions that mount both read_write. */
  async start(agent: string, environment: string, runId: string, seed: number): Promise<void> {
    this.runId = runId
    this.seed = seed
    const ms = this.client.beta.memoryStores
    for (const name of STORES) {
      const store = await ms.create({ name, description: 'Written under faults by API writers and sessions.' })
      this.stores.push(store.id)
      for (const [i, path] of SHARED_PATHS.entries()) {
        const tag = `${runId}-seed-${this.stores.length}-${i}`
        const m = await ms.memories.create(store.id, { path, content: tag }, { headers: { 'Idempotency-Key': tag } })
        this.ids.set(`${store.id}\n${path}`, m.id)
        this.writes.push({ kind: 'seed', store: store.id, path, memoryId: m.id, tag, sha: sha256(tag), outcome: 'acknowledged', at: Date.now() })
      }
    }
    const resources = this.stores.map((memory_store_id) => ({ type: 'memory_store', memory_store_id, access: 'read_write' }))
    for (let i = 0; i < SESSIONS; i++) {
      const s = await this.client.beta.sessions.create({ agent, environment_id: environment, resources } as any)
      const slugs = new Map<string, string>()
      for (const r of s.resources as any[]) if (r.type === 'memory_store') slugs.set(r.memory_store_id, r.mount_path)
      this.sessions.push({ id: s.id, slugs })
    }
  }

  get sessionIds(): string[] {
    return this.sessions.map((s) => s.id)
  }

  async run(endAt: number): Promise<void> {
    await Promise.all([
      ...Array.from({ length: API_WRITERS }, (_, w) => this.apiWriter(w, endAt)),
      this.races(endAt),
      ...this.sessions.map((s, i) => this.sessionWriter(s, i, endAt)),
    ])
  }

  /** Unconditional updates of the shared paths, one attempt each, and now and then a keyed create of a path of its own. */
  private async apiWriter(w: number, endAt: number): Promise<void> {
    const rng = substream(this.seed, `memory-api-${w}`)
    for (let n = 0; Date.now() < endAt; n++) {
      const store = rng.pick(this.stores)
      const tag = `${this.runId}-a${w}-${n}`
      if (n % CREATE_EVERY === CREATE_EVERY - 1) {
        const path = `/api/w${w}/${n}.md`
        const rec: MemWrite = { kind: 'api-create', store, path, tag, sha: sha256(tag), outcome: 'acknowledged', at: Date.now() }
        try {
          const m = await this.client.beta.memoryStores.memories.create(store, { path, content: tag }, { headers: { 'Idempotency-Key': tag } })
          rec.memoryId = m.id
        } catch (err) {
          Object.assign(rec, failed(err))
        }
        this.writes.push(rec)
      } else {
        const path = rng.pick(SHARED_PATHS)
        const memoryId = this.idOf(store, path)!
        const rec: MemWrite = { kind: 'api-update', store, path, memoryId, tag, sha: sha256(tag), outcome: 'acknowledged', at: Date.now() }
        try {
          await this.once.beta.memoryStores.memories.update(memoryId, { memory_store_id: store, content: tag })
        } catch (err) {
          Object.assign(rec, failed(err))
        }
        this.writes.push(rec)
      }
      await sleep(API_EVERY_MS)
    }
  }

  /** A memory read, then two updates at once, each requiring the hash read: at most one may win. */
  private async races(endAt: number): Promise<void> {
    const rng = substream(this.seed, 'memory-races')
    while (Date.now() < endAt) {
      const store = rng.pick(this.stores)
      const path = rng.pick(SHARED_PATHS)
      const memoryId = this.idOf(store, path)!
      const base = await this.client.beta.memoryStores.memories.retrieve(memoryId, { memory_store_id: store, view: 'basic' } as any).then(
        (m) => m.content_sha256,
        () => undefined,
      )
      if (base) {
        const pair = this.pairs++
        await Promise.all(
          [0, 1].map(async (i) => {
            const tag = `${this.runId}-r${pair}-${i}`
            const rec: MemWrite = { kind: 'race', store, path, memoryId, tag, sha: sha256(tag), outcome: 'acknowledged', base, pair, at: Date.now() }
            try {
              await this.once.beta.memoryStores.memories.update(memoryId, {
                memory_store_id: store,
                content: tag,
                precondition: { type: 'content_sha256', content_sha256: base },
              })
            } catch (err) {
              Object.assign(rec, failed(err))
            }
            this.writes.push(rec)
          }),
        )
      }
      await sleep(RACE_EVERY_MS)
    }
  }

  /** Turns whose bash writes a unique tag over a file in one of the session's mounts: a shared path, or one of its own. */
  private async sessionWriter(s: { id: string; slugs: Map<string, string> }, i: number, endAt: number): Promise<void> {
    const rng = substream(this.seed, `memory-session-${i}`)
    for (let n = 0; Date.now() < endAt; n++) {
      const store = rng.pick(this.stores)
      const path = rng.next() < SESSION_OWN_PATH ? `/sessions/s${i}/${n}.md` : rng.pick(SHARED_PATHS)
      const tag = `${this.runId}-s${i}-${n}`
      const file = `${s.slugs.get(store)}${path}`
      const rec: MemWrite = { kind: 'session', store, path, tag, sha: sha256(`${tag}\n`), outcome: 'unknown', session: s.id, at: Date.now() }
      this.writes.push(rec)
      const out = await oneTurn(this.client, s.id, `memwrite ${tag} ${file}`, TURN_MS, `mem-${tag}`)
      Object.assign(rec, sessionOutcome(out, tag, path))
      if (rec.outcome === 'unknown') await sleep(1000)
    }
  }

  /** Waits for the sessions to be idle, then reads every memory (GET) and every version of both stores. */
  async settle(client: Anthropic, say: (s: string) => void): Promise<MemoryData> {
    const by = Date.now() + SETTLE_MS
    while (Date.now() < by) {
      const statuses = await Promise.all(
        this.sessions.map((s) =>
          client.beta.sessions.retrieve(s.id).then(
            (x) => x.status,
            () => 'unreachable',
          ),
        ),
      )
      if (statuses.every((st) => st === 'idle')) break
      await sleep(1000)
    }
    const d: MemoryData = { stores: this.stores, sessions: this.sessionIds, writes: this.writes, memories: [], versions: [], readErrors: [] }
    const ms = client.beta.memoryStores
    for (const store of this.stores) {
      try {
        for await (const item of ms.memories.list(store, { limit: 100 } as any)) {
          if (item.type !== 'memory') continue
          const m = await ms.memories.retrieve(item.id, { memory_store_id: store, view: 'basic' } as any)
          d.memories.push({ store, id: m.id, path: m.path, sha: m.content_sha256, versionId: m.memory_version_id })
        }
        for await (const v of ms.memoryVersions.list(store, { limit: 100, view: 'basic' } as any)) {
          d.versions.push({
            store,
            id: v.id,
            memory_id: v.memory_id,
            operation: v.operation,
            sha: v.content_sha256 ?? null,
            created_at: v.created_at,
            created_by: v.created_by as VersionRead['created_by'],
            path: v.path,
          })
        }
      } catch (err) {
        d.readErrors.push(`${store}: ${(err as Error).message}`)
      }
    }
    say(`memories: ${memorySummary(d)}`)
    return d
  }
}

/**
 * A session write's outcome from its turn: the result of the bash call that wrote its tag (a turn may also hold the
 * end of an earlier one, swept together with it) and the memory note appended to it, if any.
 */
function sessionOutcome(out: TurnOutcome, tag: string, path: string): { outcome: MemOutcome; why?: string } {
  if ('error' in out) return { outcome: 'unknown', why: out.error }
  const uses = out.events.filter((e) => e.type === 'agent.tool_use' && JSON.stringify(e.input ?? {}).includes(`echo ${tag} >`))
  const results = toolResults(out.events.filter((e) => e.type === 'agent.tool_result' && uses.some((u) => u.id === e.tool_use_id)))
  if (uses.length !== 1 || results.length !== 1) return { outcome: 'unknown', why: `${uses.length} tool uses, ${results.length} results` }
  const r = results[0]!
  if (r.isError) return { outcome: 'unknown', why: `error result: ${r.text.slice(0, 120)}` }
  if (r.text.includes('could not be stored now')) return { outcome: 'unknown', why: 'changes not stored yet' }
  if (r.text.includes(`${path}: not stored`)) return { outcome: 'refused', why: r.text.slice(0, 200) }
  if (!r.text.startsWith('wrote')) return { outcome: 'unknown', why: `unexpected result: ${r.text.slice(0, 120)}` }
  return { outcome: 'acknowledged' }
}

/** The report's figures: outcomes per kind of write, and what was read back. */
export function memorySummary(d: MemoryData): string {
  const kinds: MemWriteKind[] = ['api-update', 'api-create', 'race', 'session']
  const per = kinds.map((k) => {
    const ws = d.writes.filter((w) => w.kind === k)
    const n = (o: MemOutcome) => ws.filter((w) => w.outcome === o).length
    return `${k} ${n('acknowledged')} acknowledged / ${n('refused')} refused / ${n('unknown')} unknown`
  })
  return `${per.join(', ')}; ${d.versions.length} versions of ${d.memories.length} memories in ${d.stores.length} stores, ${d.sessions.length} sessions`
}
