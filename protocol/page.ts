/** One page of a list: the records, and the cursor of the next page (null on the last). */
export interface Page<T> {
  data: T[]
  next_page: string | null
}

/**
 * A page as SPEC "Skills" shapes the skills' lists: `has_more` says whether `next_page` leads anywhere. The official
 * client pages these lists by `next_page` alone (its PageCursor ignores `has_more`), so the two always agree.
 */
export interface PageWithMore<T> extends Page<T> {
  has_more: boolean
}

export const withHasMore = <T>(page: Page<T>): PageWithMore<T> => ({ ...page, has_more: page.next_page !== null })
