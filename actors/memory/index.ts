import { fail } from '../../protocol/errors/fail.js'
import { MemoryStoreKind } from '../../protocol/ops/memory.js'
import type { MemoryStore } from '../../protocol/schemas/memory.js'
import { Buckets, partitionOf } from '../../protocol/subjects.js'
import { clearSubject, type HostContext, listedKind, openBucket, SERVING_WAIT_MS, type Work } from '../kit/index.js'
import { memoryStoreOps } from './behaviour.js'
import { LoadedStores } from './loaded.js'
import { memoryStoreMarks } from './marks.js'
import { MemoryRecords } from './records.js'
import { STORE_PREFIX, type StoreState } from './state.js'

/**
 * What a session's host reads of a store without asking its owner (issue 42 point 4's materialisation): a version's
 * content, which never changes once written. It writes nothing.
 */
export async function memoryContents(
  ctx: Pick<HostContext, 'kvm' | 'storage' | 'js'>,
): Promise<{ content(store: string, version: string): Promise<string | undefined> }> {
  const kv = await openBucket(ctx.kvm, ctx.storage, Buckets.memories)
  return new MemoryRecords(kv, Buckets.memories, ctx.js, () => false)
}

/**
 * Memory stores (kit/listed-kind.ts): each store a durable-state actor on the owner of its partition, its state the
 * store's record; its memories and versions records of their own in `troupe_memories` (records.ts), which the same
 * actor alone writes, one exclusive op at a time, and holds in memory while it lives (loaded.ts). A deleted store's
 * memories are removed as work (resumed by the next owner after a crash), by sequence.
 */
export const memoryStoreKind = listedKind({
  contract: MemoryStoreKind,
  bucket: Buckets.memoryStores,
  marks: memoryStoreMarks,
  missing: (id) => fail('memory_store_not_found', id),
  prefix: STORE_PREFIX,
  // A deleted store is not listed (its record stays, as a tombstone, until its memories are gone and after).
  view: (s: StoreState) => (s.deleted_at ? undefined : s.store) as MemoryStore,
  work: (ctx): Work<StoreState> => ({
    pending: (s) => !!s.deleted_at && !s.cleared,
    async step(s) {
      await clearSubject(ctx.jsm, `KV_${Buckets.memories}`, `$KV.${Buckets.memories}.${s.store.id}.>`)
      return { ...s, cleared: true }
    },
    abandon: (s) => ({ ...s, cleared: true }),
  }),
  async ops(ctx, states, projection) {
    const kv = await openBucket(ctx.kvm, ctx.storage, Buckets.memories)
    const records = new MemoryRecords(kv, Buckets.memories, ctx.js, (store) => {
      const p = partitionOf(store)
      return ctx.serves(MemoryStoreKind.kind, p) || ctx.whenServing(MemoryStoreKind.kind, p, SERVING_WAIT_MS)
    })
    const loaded = new LoadedStores(records)
    return memoryStoreOps({ states, projection, loaded, records, client: ctx.client })
  },
})
