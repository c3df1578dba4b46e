import { isApiError } from '../../protocol/errors/api-error.js'
import { newId } from '../../protocol/ids.js'
import type { MemoryStoreKind } from '../../protocol/ops/memory.js'
import type { DurableState } from '../kit/index.js'
import type { MemoryRecords } from './records.js'
import type { StoreState } from './state.js'

/**
 * A create's or an update's content, written before its exclusive op rather than inside it: a store's writes run one at
 * a time, and a content's write decides nothing (a fresh version id, named by no head until the op commits one), so the
 * contents of concurrent writes are stored side by side and each op is left only its head to write (a create's two
 * writes in a row become one). The op uses the staged version when it makes one; a refusal (a 4xx), or an op that made
 * none (nothing changed, a keyed retry), leaves bytes nothing names, which are deleted again (a delete marker: the
 * bucket keeps one message per key). Any other failure leaves them (the outcome may be unknown: a head that did land
 * names them); they are never read, and go with the store.
 */
export class Staging {
  private readonly staged = new WeakMap<object, string>()

  constructor(
    private readonly records: MemoryRecords,
    private readonly states: DurableState<StoreState, typeof MemoryStoreKind>,
  ) {}

  /** The version id whose content was staged for this request, if any. */
  of(input: object): string | undefined {
    return this.staged.get(input)
  }

  async around<I extends { id: string }, R extends { memory_version_id: string }>(input: I, content: string, run: (input: I) => Promise<R>): Promise<R> {
    // Only for a store that takes writes: bytes staged under an id that names no store would never be removed.
    const s = await this.states.read(input.id)
    if (!s || s.deleted_at || s.store.archived_at) return run(input)
    const version = newId('memver')
    await this.records.putContent(input.id, version, content)
    this.staged.set(input, version)
    let used = false
    try {
      const r = await run(input)
      used = r.memory_version_id === version
      return r
    } catch (err) {
      if (!isApiError(err) || err.status >= 500) used = true
      throw err
    } finally {
      if (!used) this.records.dropContent(input.id, version).catch(() => undefined)
    }
  }
}
