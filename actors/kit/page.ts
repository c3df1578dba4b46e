import { decodeCursor, encodeCursor, isRecordPosition } from '../../protocol/cursor.js'
import type { Page } from '../../protocol/page.js'
import { newestFirst, type Projection, type Sortable } from './projection.js'

export type { Page } from '../../protocol/page.js'

/**
 * One forward page from a projection, newest first. The cursor stores the last record's sort position,
 * so records created or deleted between pages neither repeat nor shift the page boundary.
 */
export function pageOf<T extends Sortable, R = T>(
  projection: Pick<Projection<T>, 'list' | 'startAfter'>,
  resource: string,
  filters: Record<string, unknown>,
  page: string | undefined,
  limit: number,
  keep: (rec: T) => boolean,
  view: (rec: T) => R = (r) => r as unknown as R,
): Page<R> {
  const after = decodeCursor(resource, filters, page, isRecordPosition)
  const all = projection.list()
  const data: R[] = []
  let last: T | undefined
  let i = projection.startAfter(after as T | undefined)
  for (; i < all.length && data.length < limit; i++) {
    const rec = all[i]!
    if (keep(rec)) {
      data.push(view(rec))
      last = rec
    }
  }
  // Only promise a next page when one exists: the client keeps paging while next_page is non-null.
  let more = false
  for (; i < all.length; i++)
    if (keep(all[i]!)) {
      more = true
      break
    }
  const next_page = more && last ? encodeCursor(resource, filters, { id: last.id, created_at: last.created_at }) : null
  return { data, next_page }
}

/**
 * A list held whole by its owner (a vault's credentials), paged as a projection is: newest first, the cursor the last
 * record's sort position.
 */
export function listOf<T extends Sortable>(items: readonly T[]): Pick<Projection<T>, 'list' | 'startAfter'> {
  const sorted = [...items].sort(newestFirst)
  return {
    list: () => sorted,
    startAfter: (after) => {
      if (!after) return 0
      const i = sorted.findIndex((r) => newestFirst(r, after) > 0)
      return i < 0 ? sorted.length : i
    },
  }
}
