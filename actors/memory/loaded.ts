import { randomBytes } from 'node:crypto'
import { asMoving } from '../kit/index.js'
import { VersionHistory } from './history.js'
import type { MemoryRecords } from './records.js'
import { MemoryTree } from './tree.js'

/** One store's memories in memory on its owner: the tree, loaded with the store's actor, and its history on demand. */
export class LoadedStore {
  private history?: Promise<VersionHistory>
  /** Names this load: a tree loaded afresh (another activation, another owner) never answers an older load's token. */
  private readonly stamp = randomBytes(6).toString('hex')

  constructor(
    readonly id: string,
    readonly tree: MemoryTree,
    private readonly records: MemoryRecords,
  ) {}

  /**
   * Names the tree as it is now: equal tokens, the same memories at the same versions. What a session's mount passes
   * back to `memories.index` to learn cheaply that nothing changed since it last looked.
   */
  get token(): string {
    return `${this.stamp}.${this.tree.changes}`
  }

  /** The store's versions: its `v.` records and its live heads' current versions. */
  versions(): Promise<VersionHistory> {
    this.history ??= this.records.loadVersions(this.id).then(
      (recorded) => new VersionHistory([...recorded, ...this.tree.all().map((h) => h.head.version)]),
      (err) => {
        this.history = undefined
        throw moving(err)
      },
    )
    return this.history
  }

  /** The history if it is loaded (a write adds its versions there; one not loaded reads them from the store later). */
  async ifLoaded(): Promise<VersionHistory | undefined> {
    return this.history ? await this.history.catch(() => undefined) : undefined
  }
}

/** A read op loads too, and its caller must see the retryable answer of an actor moving, not a failure. */
const moving = asMoving('memory_store')

interface Entry {
  activation: number
  store: Promise<LoadedStore>
  used: number
}

/** An entry unused this long is dropped (the store's actor leaves memory after as long idle). */
const IDLE_MS = 10 * 60_000

/**
 * The loaded stores of this host, each tied to the activation of its store's actor that loaded it: while that actor
 * lives it is the store's only writer (single activation, fenced writes), so what it holds stays true; an actor
 * rebuilt or activated again (after a failure, a move, passivation) has a new number and loads afresh, so nothing
 * another owner wrote meanwhile is missed.
 */
export class LoadedStores {
  private readonly entries = new Map<string, Entry>()
  private readonly sweep: NodeJS.Timeout

  constructor(private readonly records: MemoryRecords) {
    this.sweep = setInterval(() => {
      const t = Date.now()
      for (const [id, e] of this.entries) if (t - e.used > IDLE_MS) this.entries.delete(id)
    }, 60_000)
    this.sweep.unref()
  }

  get(store: string, activation: number): Promise<LoadedStore> {
    const e = this.entries.get(store)
    if (e && e.activation === activation) {
      e.used = Date.now()
      return e.store
    }
    const loading = this.records.loadHeads(store).then(
      (heads) => new LoadedStore(store, new MemoryTree(heads), this.records),
      (err) => {
        throw moving(err)
      },
    )
    const entry: Entry = { activation, store: loading, used: Date.now() }
    this.entries.set(store, entry)
    loading.catch(() => {
      if (this.entries.get(store) === entry) this.entries.delete(store)
    })
    return loading
  }

  drop(store: string): void {
    this.entries.delete(store)
  }

  close(): void {
    clearInterval(this.sweep)
    this.entries.clear()
  }
}
