import type { AgentKind } from '../../protocol/ops/agent.js'
import type { Agent } from '../../protocol/schemas/agent.js'
import { type DurableState, RecordStore } from '../kit/index.js'

/**
 * How agents sit in the `troupe_agents` bucket:
 *
 *   agent.<id>           the head: the latest version's full record, with archived_at. It is the state of the
 *                        agent's actor (the kit's record `<kind>.<id>`), written only by the owner of its
 *                        partition, fenced by its revision; a create (any host) is the one write that makes it.
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
export const versionKey = (id: string, n: number) => `version.${id}.${n}`

/** The agents' actors (their heads), and the records of the versions their heads moved past. */
export class AgentStore {
  readonly versions: RecordStore<Agent>

  constructor(readonly heads: DurableState<StoredHead, typeof AgentKind>) {
    this.versions = new RecordStore<Agent>(heads.kv)
  }

  /**
   * The head of agent `id`; undefined when it does not exist (or `id` is not even shaped like an agent id). On the
   * host owning it, from memory.
   */
  async head(id: string | undefined): Promise<StoredHead | undefined> {
    return typeof id === 'string' ? this.heads.read(id) : undefined
  }

  /** Version `n` of the agent whose head is `head`; undefined when there is no such version. */
  async version(head: Agent, n: number): Promise<Agent | undefined> {
    if (!Number.isInteger(n) || n < 1 || n > head.version) return undefined
    if (n === head.version) return head
    const v = await this.versions.get(versionKey(head.id, n))
    return v ? { ...v.value, archived_at: head.archived_at } : undefined
  }
}
