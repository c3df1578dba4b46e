import type { VersionRecord } from './records.js'

/** What a version list asks for (the client's MemoryVersionListParams, as parsed). */
export interface VersionFilter {
  memory_id?: string
  operation?: string
  session_id?: string
  api_key_id?: string
  service_account_id?: string
  gte?: number
  lte?: number
}

const order = (a: VersionRecord, b: VersionRecord) =>
  a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0

/**
 * A store's versions as its owner holds them (metadata only, never content), oldest first, listed newest first. Loaded
 * the first time a version op asks (a store's history can far outgrow its memories) and kept current by the writes.
 */
export class VersionHistory {
  private readonly byId = new Map<string, VersionRecord>()
  private readonly sorted: VersionRecord[] = []

  constructor(versions: Iterable<VersionRecord>) {
    for (const v of versions) if (!this.byId.has(v.id)) this.byId.set(v.id, v)
    this.sorted.push(...this.byId.values())
    this.sorted.sort(order)
  }

  get(id: string): VersionRecord | undefined {
    return this.byId.get(id)
  }

  /** A new version, or a version rewritten (redacted). */
  put(v: VersionRecord): void {
    const old = this.byId.get(v.id)
    this.byId.set(v.id, v)
    const i = this.position(v)
    if (old) this.sorted[i] = v
    else this.sorted.splice(i, 0, v)
  }

  /** Newest first, after `after` (the previous page's last), those `filter` keeps; `more`: one more follows. */
  page(filter: VersionFilter, after: { id: string; created_at: string } | undefined, limit: number): { items: VersionRecord[]; more: boolean } {
    let i = after ? this.position(after as VersionRecord) - 1 : this.sorted.length - 1
    const items: VersionRecord[] = []
    for (; i >= 0; i--) {
      const v = this.sorted[i]!
      if (!keeps(filter, v)) continue
      if (items.length === limit) return { items, more: true }
      items.push(v)
    }
    return { items, more: false }
  }

  /** The index `v` has, or would have, in the sorted list. */
  private position(v: VersionRecord): number {
    let lo = 0
    let hi = this.sorted.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (order(this.sorted[mid]!, v) < 0) lo = mid + 1
      else hi = mid
    }
    return lo
  }
}

function keeps(f: VersionFilter, v: VersionRecord): boolean {
  if (f.memory_id !== undefined && v.memory_id !== f.memory_id) return false
  if (f.operation !== undefined && v.operation !== f.operation) return false
  const by = v.created_by
  if (f.session_id !== undefined && !(by.type === 'session_actor' && by.session_id === f.session_id)) return false
  if (f.api_key_id !== undefined && !(by.type === 'api_actor' && by.api_key_id === f.api_key_id)) return false
  if (f.service_account_id !== undefined && !(by.type === 'service_account_actor' && by.service_account_id === f.service_account_id)) return false
  const t = Date.parse(v.created_at)
  if (f.gte !== undefined && t < f.gte) return false
  if (f.lte !== undefined && t > f.lte) return false
  return true
}
