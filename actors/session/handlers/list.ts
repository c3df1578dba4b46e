import { decodeCursor, encodeCursor, isRecordPosition } from '../../../protocol/cursor.js'
import type { SessionListInput } from '../../../protocol/schemas/session.js'
import type { Session } from '../../../protocol/session.js'
import type { Projection } from '../../kit/index.js'

interface Position {
  id: string
  created_at: string
  /** Which way the page this cursor asks for lies. */
  dir: 'next' | 'prev'
}

const isPosition = (a: unknown): a is Position => isRecordPosition(a) && ((a as { dir?: unknown }).dir === 'next' || (a as { dir?: unknown }).dir === 'prev')

const key = (s: { created_at: string; id: string }) => `${s.created_at}\u0000${s.id}`

/** The list view: archived sessions report `terminated` (DECISIONS.md). */
const view = (s: Session): Session => (s.archived_at ? { ...s, status: 'terminated' } : s)

/**
 * GET /v1/sessions: filters over the sessions projection, both orders, and the bidirectional cursors the
 * official client's BidirectionalPageCursor reads (`next_page` forward, `prev_page` back). Filtering is a pass
 * over the projection per request, fine for tens of thousands of sessions per deployment.
 */
export function listSessions(projection: Projection<Session>, q: SessionListInput) {
  const order = q.order ?? 'desc'
  const limit = q.limit ?? 100
  const filters = {
    order,
    agent_id: q.agent_id,
    agent_version: q.agent_version,
    statuses: q.statuses ? [...q.statuses].sort() : undefined,
    include_archived: q.include_archived ?? false,
    gt: q['created_at[gt]']?.toISOString(),
    gte: q['created_at[gte]']?.toISOString(),
    lt: q['created_at[lt]']?.toISOString(),
    lte: q['created_at[lte]']?.toISOString(),
    deployment_id: q.deployment_id,
    memory_store_id: q.memory_store_id,
  }
  const statuses = filters.statuses ? new Set<string>(filters.statuses) : undefined
  const keep = (s: Session) => {
    if (s.archived_at && !filters.include_archived) return false
    if (filters.agent_id !== undefined && s.agent.id !== filters.agent_id) return false
    if (filters.agent_version !== undefined && s.agent.version !== filters.agent_version) return false
    if (statuses && !statuses.has(view(s).status)) return false
    if (filters.deployment_id !== undefined && s.deployment_id !== filters.deployment_id) return false
    // A store is attached at creation only, so the resources the session was created with say it all.
    if (filters.memory_store_id !== undefined && !s.resources.some((r) => r.type === 'memory_store' && r.memory_store_id === filters.memory_store_id))
      return false
    const t = s.created_at
    return (!filters.gt || t > filters.gt) && (!filters.gte || t >= filters.gte) && (!filters.lt || t < filters.lt) && (!filters.lte || t <= filters.lte)
  }
  // The projection is newest first.
  const rows = projection.list().filter(keep)
  if (order === 'asc') rows.reverse()
  const before = (a: string, b: string) => (order === 'desc' ? a > b : a < b)

  const pos = decodeCursor('sessions', filters, q.page, isPosition)
  let start = 0
  let end = rows.length
  if (pos?.dir === 'next') {
    const k = key(pos)
    start = rows.findIndex((s) => before(k, key(s)))
    if (start < 0) start = rows.length
    end = Math.min(rows.length, start + limit)
  } else if (pos?.dir === 'prev') {
    const k = key(pos)
    end = rows.findIndex((s) => !before(key(s), k))
    if (end < 0) end = rows.length
    start = Math.max(0, end - limit)
  } else end = Math.min(rows.length, limit)

  const page = rows.slice(start, end)
  const first = page[0]
  const last = page[page.length - 1]
  return {
    data: page.map(view),
    next_page: last && end < rows.length ? encodeCursor('sessions', filters, { id: last.id, created_at: last.created_at, dir: 'next' }) : null,
    prev_page: first && start > 0 ? encodeCursor('sessions', filters, { id: first.id, created_at: first.created_at, dir: 'prev' }) : null,
  }
}
