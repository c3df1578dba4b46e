import type { WebhookMark } from '../../protocol/webhook-event.js'
import type { MarksOf } from '../kit/index.js'
import type { StoreState } from './state.js'

/**
 * The webhook events a store's changes make, in the same message as the change: its creation, its archiving and its
 * deletion (the moment its state says deleted, before its memories are removed). Updates make none (the client knows
 * no `memory_store.updated`), nor do memories' writes (they are not in this record).
 */
export const memoryStoreMarks: MarksOf<StoreState> = (_key, was, next) => {
  const id = (next ?? was)?.store.id
  if (!id) return []
  const out: WebhookMark[] = []
  if (!was && next) out.push({ type: 'memory_store.created', id })
  if (was && next?.store.archived_at && !was.store.archived_at) out.push({ type: 'memory_store.archived', id })
  if (was && next?.deleted_at && !was.deleted_at) out.push({ type: 'memory_store.deleted', id })
  return out
}
