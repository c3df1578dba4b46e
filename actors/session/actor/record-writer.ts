import { type FencedRecord, FenceLost, type Mailbox } from '../../kit/index.js'
import { toWireUsage } from '../billing/index.js'
import type { History } from '../history/index.js'
import { statsOf, type SessionRecord } from '../history/index.js'

/**
 * The session's record as its actor writes it: at status changes, updates and archive, each time after the events it
 * sums up are stored (a host taking over answers reads of an idle, unmarked session from it), and never more often
 * than that, since every host receives every record write (for lists).
 */
export class RecordWriter {
  /** The running turn's record, due once the turn has run `runningMs`. */
  private due: NodeJS.Timeout | undefined

  constructor(
    private readonly mb: Mailbox,
    private readonly h: History,
    private readonly stored: FencedRecord<SessionRecord>,
    private readonly runningMs: number,
  ) {}

  /** Writes the record once every write queued so far is stored. */
  persist(): Promise<void> {
    // This write says more than a running record still due would: that one is dropped.
    this.cancel()
    return this.mb.persist(async () => {
      const rec = this.h.rec
      const totals = this.h.liveTotals()
      rec.session.usage = toWireUsage(totals)
      rec.session.stats = statsOf(rec.session, totals)
      // Every thread's usage: reads of an idle session answer from the record.
      await this.stored.write(this.h.children.size ? { ...rec, totals: this.h.allTotals() } : rec)
    })
  }

  /** A turn began: the record says so once it has run `runningMs`, unless a write comes first (a quick turn's idle). */
  running(): void {
    this.due ??= setTimeout(() => {
      this.due = undefined
      if (!this.mb.dead) void this.persist()
    }, this.runningMs)
  }

  /** Nothing more is due (the actor stopped). */
  cancel(): void {
    clearTimeout(this.due)
    this.due = undefined
  }

  /** Deletes the record (session delete); false when another host has written it since. */
  delete(): Promise<boolean> {
    return this.stored.delete(this.h.rec).then(
      () => true,
      (err) => (err instanceof FenceLost ? false : Promise.reject(err)),
    )
  }
}
