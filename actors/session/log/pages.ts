import type { JetStreamClient } from '@nats-io/jetstream'
import { decodeCursor, encodeCursor, isSeq } from '../../../protocol/cursor.js'
import { comparePositions, END, endOf, isAfter, positionOf, type EventItem, type Position } from '../../../protocol/event-item.js'
import { readSessionRange } from './event-reader.js'
import { isInternalType } from '../../../protocol/events.js'
import type { SessionEvent } from '../../../protocol/session-events.js'
import type { EventsListInput } from '../../../protocol/schemas/events.js'
import { EVENTS_STREAM, eventsSubject } from '../../../protocol/subjects.js'

/**
 * GET …/events, one page at a time without reading the whole history: the cursor is a position (a stream
 * sequence, and the event's part in it when its message holds several: protocol/event-item.ts), so a
 * page reads only the window of the session's records it needs (forwards for asc; for desc, windows below the
 * cursor, sized from how densely the session's records sit among other sessions'), plus a look-ahead for the
 * records that mark its client events handled (`processed_at` comes from the next stored record's
 * `Troupe-Processed` header or a `_processed` record, see log.ts). The look-ahead stops at the last mark it
 * needs: the mailbox handles client events in order, so a mark is at most one turn away; events the live actor
 * still has queued need none.
 *
 * A filter that matches rarely would otherwise read the whole history for one page: after SCAN_BUDGET records
 * (or ten times the limit) a page answers with what it found and a cursor where it stopped. WIRE §2: clients
 * page on while `next_page` is set, even past a short or empty page.
 */

/** Records one page may pass over looking for matches. */
const SCAN_BUDGET = 2000
/** Records asked of the server beyond what a page needs (internal records, a nearby mark). */
const SLACK = 16
/** A window (desc) that holds more records than this many times what is still needed is re-cut closer. */
const WINDOW_CAP = 4

export interface EventPage {
  data: SessionEvent[]
  next_page: string | null
}

interface Row {
  at: Position
  event: SessionEvent
  /** The stored JSON's length: what the row adds to the reply. */
  size: number
}

type Filters = ReturnType<typeof normalise>

function normalise(q: EventsListInput) {
  return {
    order: q.order ?? 'asc',
    types: q.types ? [...q.types].sort() : undefined,
    gt: q['created_at[gt]']?.toISOString(),
    gte: q['created_at[gte]']?.toISOString(),
    lt: q['created_at[lt]']?.toISOString(),
    lte: q['created_at[lte]']?.toISOString(),
  }
}

/**
 * Folds records into rows (events that pass the type filter) and marks (client event id → processed_at of the
 * record that marked it handled), in whatever order windows are read.
 */
class Fold {
  readonly waiting = new Map<string, SessionEvent>()
  private readonly marks = new Map<string, string>()
  private readonly types: Set<string> | undefined

  constructor(
    f: Filters,
    private readonly queued: (id: string) => boolean,
  ) {
    this.types = f.types ? new Set(f.types) : undefined
  }

  /** Reads one record; returns its row when it is one (`rows` false: only its marks count). */
  add(item: EventItem, rows = true): Row | undefined {
    let parsed: SessionEvent | undefined
    const event = () => (parsed ??= JSON.parse(item.json) as SessionEvent)
    const marked = item.type === '_processed' ? (event() as unknown as { ids: string[] }).ids : item.processed
    if (marked) {
      const at = event().processed_at as string
      for (const id of marked) {
        const e = this.waiting.get(id)
        if (!e) this.marks.set(id, at)
        else {
          e.processed_at = at
          this.waiting.delete(id)
        }
      }
    }
    if (!rows || !item.type || isInternalType(item.type) || (this.types && !this.types.has(item.type))) return undefined
    const e = event()
    if (e.processed_at === null) {
      const at = this.marks.get(e.id)
      if (at !== undefined) {
        e.processed_at = at
        this.marks.delete(e.id)
      } else if (!this.queued(e.id)) this.waiting.set(e.id, e)
    }
    return { at: positionOf(item), event: e, size: item.json.length }
  }
}

/** `keep` for the created_at bounds (compared with processed_at); undefined when there are none. */
function timeBounds(f: Filters): ((e: SessionEvent) => boolean) | undefined {
  if (!f.gt && !f.gte && !f.lt && !f.lte) return undefined
  return (e) => {
    const t = e.processed_at
    if (!t) return false
    return (!f.gt || t > f.gt) && (!f.gte || t >= f.gte) && (!f.lt || t < f.lt) && (!f.lte || t <= f.lte)
  }
}

/**
 * Chooses a page's rows from candidates offered in page order (asc: oldest first, desc: newest first). A row
 * whose processed_at is still unknown blocks the choice when time bounds depend on it.
 */
class Picker {
  readonly page: Row[] = []
  private next = 0
  private bytes = 0
  /** The next row would have made the reply too big for one NATS message: the page ends before it. */
  private cut = false

  constructor(
    private readonly limit: number,
    private readonly inTime: ((e: SessionEvent) => boolean) | undefined,
    private readonly fold: Fold,
    private readonly maxBytes: number,
  ) {}

  /** Takes candidates from `rows[next…]` until the page (plus one, to know there is more) is full or blocked. */
  take(rows: Row[]): void {
    while (this.next < rows.length && !this.full) {
      const r = rows[this.next]!
      if (this.inTime && this.fold.waiting.has(r.event.id)) return
      if (this.page.length && this.bytes + r.size > this.maxBytes && (!this.inTime || this.inTime(r.event))) {
        this.cut = true
        return
      }
      this.next++
      if (!this.inTime || this.inTime(r.event)) {
        this.page.push(r)
        this.bytes += r.size
      }
    }
  }

  get full() {
    return this.cut || this.page.length > this.limit
  }

  /** How many rows the page hands out (fewer than the limit when their size cut it short). */
  get size() {
    return this.cut ? this.page.length : this.limit
  }

  /** Rows handed out still wait for their mark (their processed_at would be wrong). */
  get unresolved() {
    return this.page.slice(0, this.size).some((r) => this.fold.waiting.has(r.event.id))
  }
}

/** Reads the session's records from `from` through `until` in order; `visit` returns false to stop early. */
async function scan(o: ListOptions, from: number, until: number, batch: number, visit: (item: EventItem) => boolean): Promise<void> {
  if (from > until) return
  // One thread's subject (the session's own list: its primary's). Its last stored sequence is what a read must
  // reach: one that ends short is a 503, never a short page.
  const opts = { batch: Math.min(1024, Math.max(32, batch)), through: o.lastSeq, thread: o.thread ?? 'primary' }
  const reader = readSessionRange(o.js, o.sessionId, from, until, opts)
  try {
    for (let item = await reader.next(); item; item = await reader.next()) {
      if (!visit(item)) return
    }
  } finally {
    reader.close()
  }
}

export interface ListOptions {
  js: JetStreamClient
  sessionId: string
  /** The last stored sequence of the session when the request arrived: nothing after it is read. */
  lastSeq: number
  /** Client events the live actor has not handled yet (their processed_at is null, no mark to look for). */
  queued?: (eventId: string) => boolean
  /**
   * The most a page's events may weigh (their stored JSON): the reply is one NATS message. A page that would
   * be heavier ends early with a cursor (it always holds at least one event). Default 16 MiB.
   */
  maxBytes?: number
  /** The thread listed: the token of its subject (default `primary`: the session's own list). */
  thread?: string
}

/** One page of the history (WIRE §7), oldest first by default. */
export async function listEvents(o: ListOptions, q: EventsListInput): Promise<EventPage> {
  const filters = normalise(q)
  const thread = o.thread ?? 'primary'
  // A cursor names the list it came from: a thread's does not page the session's.
  const resource = thread === 'primary' ? `session_events:${o.sessionId}` : `thread_events:${o.sessionId}:${thread}`
  const cursor = decodeCursor(resource, filters, q.page, isPagePosition)
  const after = cursor === undefined ? undefined : typeof cursor === 'number' ? endOf(cursor) : { seq: cursor[0], part: cursor[1] }
  const limit = q.limit ?? 100
  const fold = new Fold(filters, o.queued ?? (() => false))
  const picker = new Picker(limit, timeBounds(filters), fold, o.maxBytes ?? 16 * 1024 * 1024)
  const budget = Math.max(SCAN_BUDGET, 10 * limit)
  const r =
    filters.order === 'desc' ? await descending(o, after, limit, fold, picker, budget) : await ascending(o, after, limit, fold, picker, budget, !!filters.types)
  const data = picker.page.slice(0, picker.size).map((row) => row.event)
  return { data, next_page: r === null ? null : encodeCursor(resource, filters, r.part === END ? r.seq : [r.seq, r.part]) }
}

/** A cursor's position: a sequence (past its whole message), or a sequence and a part within its message. */
const isPagePosition = (a: unknown): a is number | [number, number] => isSeq(a) || (Array.isArray(a) && a.length === 2 && isSeq(a[0]) && isSeq(a[1]))

/** Returns the position the next page starts after, or null when there is none. */
async function ascending(
  o: ListOptions,
  after: Position | undefined,
  limit: number,
  fold: Fold,
  picker: Picker,
  budget: number,
  types: boolean,
): Promise<Position | null> {
  const rows: Row[] = []
  /** Once the budget is spent, rows end here and only marks are read on. */
  let frozen: Position | undefined
  let scanned = 0
  // A types[] filter passes over records it does not keep: ask for more at a time.
  const batch = types ? 512 : limit + 1 + SLACK
  // A message the previous page ended inside is read again from its start: its earlier events count for marks only.
  const from = after === undefined ? 1 : after.part === END ? after.seq + 1 : after.seq
  await scan(o, from, o.lastSeq, batch, (item) => {
    const row = fold.add(item, frozen === undefined && (after === undefined || isAfter(item, after)))
    if (row) rows.push(row)
    if (frozen === undefined && ++scanned >= budget) frozen = positionOf(item)
    picker.take(rows)
    if (picker.full) return picker.unresolved
    // Rows behind the frozen point still need their marks (a time bound, or processed_at to hand out).
    return frozen === undefined || fold.waiting.size > 0
  })
  // Marks not found through the last stored record: those events are not handled yet.
  fold.waiting.clear()
  picker.take(rows)
  if (picker.full) return picker.page[picker.size - 1]!.at
  return frozen !== undefined && comparePositions(frozen, endOf(o.lastSeq)) < 0 ? frozen : null
}

/** The first stored sequence of the session (0 when it has none), for desc windows to stop at. */
async function firstSequence(o: ListOptions): Promise<number> {
  const jsm = await o.js.jetstreamManager(false)
  const m = await jsm.direct.getMessage(EVENTS_STREAM, { seq: 1, next_by_subj: eventsSubject(o.sessionId, o.thread) })
  return m?.seq ?? 0
}

/** Returns the position the next page ends before, or null when there is none. */
async function descending(o: ListOptions, below: Position | undefined, limit: number, fold: Fold, picker: Picker, budget: number): Promise<Position | null> {
  // The message the previous page ended inside is read again: its later events count for marks only.
  const top = below !== undefined ? Math.min(below.part === 0 ? below.seq - 1 : below.seq, o.lastSeq) : o.lastSeq
  /** Rows newest first, window after window. */
  const rows: Row[] = []
  let hi = top
  let first: number | undefined
  let span = limit + 1 + SLACK
  /** Records read, cut windows included (the budget); and those folded into rows. */
  let scanned = 0
  let folded = 0
  while (hi >= (first ?? 1) && !picker.full && scanned < budget) {
    const need = limit + 1 - picker.page.length
    // Records it takes to find `need` rows, at the rate rows made the page so far (a filter keeps few).
    const rate = folded ? Math.max(picker.page.length / folded, 1 / 64) : 1
    const want = Math.ceil(need / rate)
    const cap = Math.min(WINDOW_CAP * want, budget - scanned) + SLACK
    const lo = Math.max(first ?? 1, hi - span + 1)
    const window: EventItem[] = []
    await scan(o, lo, hi, Math.min(cap, hi - lo + 1), (item) => window.push(item) < cap)
    scanned += window.length
    const end = window.length ? window[window.length - 1]!.seq! : hi
    if (window.length >= cap && end < hi) {
      // Denser than guessed: cut the window closer to hi.
      span = Math.max(need, Math.floor((want * 1.5 * (end - lo + 1)) / window.length))
      continue
    }
    folded += window.length
    const before = picker.page.length
    const found: Row[] = []
    for (const item of window) {
      const row = fold.add(item, below === undefined || comparePositions(positionOf(item), below) < 0)
      if (row) found.push(row)
    }
    rows.push(...found.reverse())
    // Every record between these rows and the top has been read: marks still missing are above the top.
    if (fold.waiting.size) await marksAbove(o, top, fold)
    picker.take(rows)
    // The next window is sized by how densely this one held rows for the page.
    const width = hi - lo + 1
    const density = (picker.page.length - before) / width
    span = Math.min(density > 0 ? Math.ceil(((limit + 1 - picker.page.length) * 1.25) / density) : width * 8, width * 64)
    hi = lo - 1
    if (picker.full || hi < 1) break
    first ??= Math.max(1, await firstSequence(o))
  }
  if (picker.full) return picker.page[picker.size - 1]!.at
  return hi >= (first ?? 1) ? { seq: hi + 1, part: 0 } : null
}

/** Reads marks stored after `top` (earlier pages, or stored since) until every waiting row has its own. */
async function marksAbove(o: ListOptions, top: number, fold: Fold): Promise<void> {
  await scan(o, top + 1, o.lastSeq, 64, (item) => {
    fold.add(item, false)
    return fold.waiting.size > 0
  })
  // Not marked through the last stored record: not handled yet.
  fold.waiting.clear()
}
