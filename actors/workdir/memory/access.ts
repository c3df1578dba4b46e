import { MemoryStoreKind, type MemoryApplied, type MemoryIndex } from '../../../protocol/ops/memory.js'
import type { MemoryChange } from '../../../protocol/schemas/memory.js'
import type { ActorClient } from '../../kit/index.js'

/**
 * What a session's memory mounts ask of the memory store kind (docs/ARCHITECTURE.md "Memory stores", what a session
 * writer calls): its owner's index and apply, and contents read straight from the bucket by version id.
 */
export interface MemoryAccess {
  /** The store's memories without content; only the token when `since` is still its token. */
  index(store: string, since: string | undefined): Promise<MemoryIndex>
  /** One tool call's changes, each a version by the session; the store's tokens before and after them. */
  apply(store: string, session: string, changes: MemoryChange[]): Promise<{ results: MemoryApplied[]; before: string; after: string }>
  /** A version's content (it never changes); undefined when the store holds none under that id. */
  content(store: string, version: string): Promise<string | undefined>
}

/** The memory access of a process that calls actors through `client` and reads contents through `contents`. */
export function memoryAccess(client: ActorClient, contents: Pick<MemoryAccess, 'content'>): MemoryAccess {
  return {
    index: (store, since) => client.call(MemoryStoreKind.ops['memories.index'], { id: store, body: since === undefined ? {} : { since } }),
    apply: (store, session, changes) => client.call(MemoryStoreKind.ops['memories.apply'], { id: store, body: { session_id: session, changes } }),
    content: (store, version) => contents.content(store, version),
  }
}
