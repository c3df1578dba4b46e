import type { SessionEvent } from '../../../protocol/session-events.js'
import type { Mailbox } from '../../kit/index.js'
import type { EventLog } from './log.js'

/** A message of several events stays far below any record limit: an event that would push it past this starts another. */
const BATCH_MAX_CHARS = 256 * 1024

interface Batch {
  /** The thread's log it is stored to: a batch holds one subject's events. */
  log: EventLog
  events: Array<{ event: SessionEvent; json: string }>
  /** Client events the first event marks as handled. */
  processed: string[]
  chars: number
  /** Closed: its write has begun, or another write was queued after it. Later events open another batch. */
  sealed: boolean
  /** Lets its write go without waiting for the macrotask. */
  go: () => void
}

/** The event that ends a turn's step: nothing the step emits after it, so its batch goes at once. */
const ENDS_STEP = new Set(['session.status_idle', 'session.thread_status_idle'])

/**
 * The order of one session's writes, on its mailbox. Service events the actor emits one after another, with no
 * other write queued between them, are stored as one message (group commit, protocol/events.ts): a turn's status
 * and the span it opens, or its message, the span it closes and the idle after it, take one append and one fence
 * each instead of two and three, on the path between a user.message and its answer. A batch's write waits one
 * macrotask before it goes, so that what the same step emits (across the awaits of its microtasks) joins it; a batch
 * that ends with the session going idle goes at once (it is on the way to the client's answer, and nothing follows).
 *
 * Every other write (a client event's append, a preview, a `_processed` record) closes the open batch when it is
 * queued: the stream keeps exactly the order in which writes were queued, which is the order the actor applied them.
 * An event that marks client events handled opens a batch of its own (only a message's first event carries marks).
 */
export class Appends {
  private open: Batch | undefined

  constructor(private readonly mb: Mailbox) {}

  /**
   * Queues a service event for `log` (its thread's subject): it joins the open batch when that is the same
   * subject's, or opens one whose write is queued now. The threads of a session share one order of writes, so an
   * event is never stored before one another thread emitted ahead of it.
   */
  event(log: EventLog, event: SessionEvent, processed: string[]): void {
    const json = JSON.stringify(event)
    let b = this.open
    if (!b || b.sealed || b.log !== log || processed.length > 0 || b.chars + json.length > BATCH_MAX_CHARS) {
      this.seal()
      let go!: () => void
      const gathered = new Promise<void>((resolve) => (go = resolve))
      b = this.open = { log, events: [], processed, chars: 0, sealed: false, go }
      const batch = b
      this.mb.enqueue(async () => {
        setImmediate(go)
        await gathered
        batch.sealed = true
        // The actor may have stopped while the batch gathered: a stopped actor writes nothing more.
        this.mb.alive()
        await batch.log.appendMany(batch.events, batch.processed)
      })
    }
    b.events.push({ event, json })
    b.chars += json.length
    if (ENDS_STEP.has(event.type)) {
      this.seal()
      b.go()
    }
  }

  /** Queues another write after every event queued so far (see `Mailbox.write`). */
  write<T>(fn: () => Promise<T>): Promise<T> {
    this.seal()
    return this.mb.write(fn)
  }

  /** Queues another write nobody waits for (see `Mailbox.enqueue`). */
  enqueue(fn: () => Promise<unknown>): void {
    this.seal()
    this.mb.enqueue(fn)
  }

  private seal(): void {
    if (this.open) this.open.sealed = true
    this.open = undefined
  }
}
