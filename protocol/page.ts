/** One page of a list: the records, and the cursor of the next page (null on the last). */
export interface Page<T> {
  data: T[]
  next_page: string | null
}
