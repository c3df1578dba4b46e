import type { KV } from '@nats-io/kv'
import { isId } from '../../protocol/ids.js'
import type { Agent } from '../../protocol/schemas/agent.js'
import { RecordStore, type Versioned } from '../kit/store.js'

/**
 * How agents sit in the `troupe_agents` bucket:
 *
 *   agent.<id>           the head: the latest version's full record, with archived_at. Every write goes
 *                        through a compare-and-set on this key; it is the fence that orders writers.
 *   version.<id>.<n>     the record of each version the head has moved past, written just before the head moves
 *                        on (so a create is one write, and a crash leaves no version without a record). Versions
 *                        are dense (1..head.version: records below, the head itself at head.version), so the
 *                        versions list pages by number with plain gets and never scans keys. Agents stored before
 *                        this layout also hold a record of their head's version, which readers never read.
 *
 * archived_at is agent-wide: it lives on the head only and is laid over every version a reader returns.
 */
export interface StoredHead {
  agent: Agent
  /** Fingerprint of the create request, when it carried an Idempotency-Key: its retries must match it. */
  created_by?: string
}

export const HEAD_PREFIX = 'agent.'
export const headKey = (id: string) => `${HEAD_PREFIX}${id}`
export const versionKey = (id: string, n: number) => `version.${id}.${n}`

export class AgentStore {
  readonly heads: RecordStore<StoredHead>
  readonly versions: RecordStore<Agent>

  /** `owns`: head keys this host is the single writer of, cached in memory (see RecordStore). */
  constructor(kv: KV, owns?: (key: string) => boolean) {
    this.heads = new RecordStore<StoredHead>(kv, owns)
    this.versions = new RecordStore<Agent>(kv)
  }

  /** The head of agent `id`; undefined when it does not exist (or `id` is not even shaped like an agent id). */
  async head(id: string | undefined): Promise<Versioned<StoredHead> | undefined> {
    // Ids reach KV keys: anything not shaped like ours (dots, wildcards, spaces) is simply not there.
    if (typeof id !== 'string' || !isId('agent', id)) return undefined
    return this.heads.get(headKey(id))
  }

  /** Version `n` of the agent whose head is `head`; undefined when there is no such version. */
  async version(head: Agent, n: number): Promise<Agent | undefined> {
    if (!Number.isInteger(n) || n < 1 || n > head.version) return undefined
    if (n === head.version) return head
    const v = await this.versions.get(versionKey(head.id, n))
    return v ? { ...v.value, archived_at: head.archived_at } : undefined
  }
}
