import type { ProcessedRecord, RequestTag } from '../../../protocol/events.js'
import type { ClientEvent, EventOf, PayloadOf, ServiceEvent, ServiceEventType } from '../../../protocol/session-events.js'
import { newId } from '../../../protocol/ids.js'
import { now } from '../../../protocol/time.js'
import type { Mailbox } from '../../kit/index.js'
import { Appends } from '../log/index.js'
import type { History } from '../history/index.js'
import type { EventLog } from '../log/index.js'
import type { Preview, StatusArgs } from '../turn/index.js'

/**
 * Everything a session stores, in the order its actor applies it: the events it emits, the marks saying which
 * client events it handled, the client events themselves, and the previews of a model response. Each is applied to
 * the History in the same step as it is queued, so the actor's memory is always "the stored events, applied", and a
 * replay after a takeover rebuilds exactly that. The actor runs ahead of the stream by at most the queue: a failed
 * append stops it, and it is rebuilt from what was stored, so nothing it did on top of an unstored event survives.
 */
export class SessionEvents {
  /** Client events handled whose ids the next stored event carries. */
  private readonly handled: string[] = []
  /**
   * `appends`: every write of the session, all its threads', goes through it, in order; emitted events are stored in
   * batches. `h` and `log`: the thread this emits for (the primary, or a child: threads.ts).
   */
  constructor(
    private readonly h: History,
    private readonly log: EventLog,
    private readonly appends: Appends,
  ) {}

  /** The writes of a new session actor: its primary thread's, which its children share. */
  static primary(h: History, log: EventLog, mb: Mailbox): SessionEvents {
    return new SessionEvents(h, log, new Appends(mb))
  }

  /** Another thread of the same session, on its own subject, in the same order of writes. */
  thread(h: History, log: EventLog): SessionEvents {
    return new SessionEvents(h, log, this.appends)
  }

  /** The stream sequence of the last append acknowledged. */
  get lastSeq(): number {
    return this.log.lastSeq
  }

  /**
   * A service event of type `T` with its fields: applied now, stored behind every earlier write (with the events
   * emitted right after it: appends.ts).
   */
  emit<T extends ServiceEventType>(type: T, fields: PayloadOf<T>, id = newId('sevt')): EventOf<T> {
    // The stamp and `fields` make the event of type `T` (PayloadOf takes it apart): the compiler cannot follow that
    // through a generic `T`, so this is where it is told.
    const ev = { type, id, ...fields, processed_at: now() } as unknown as EventOf<T>
    this.h.apply(ev)
    this.appends.event(this.log, ev, this.handled.splice(0))
    return ev
  }

  /** The session's status changes (a child thread's are its own: threads/children.ts). */
  status(...[status, idle]: StatusArgs): void {
    if (status === 'idle') this.emit('session.status_idle', idle)
    else this.emit(`session.status_${status}`, {})
  }

  /**
   * A copy of another thread's event on this (the primary's) subject, for the session's own list and stream: the same
   * event, with `session_thread_id` naming its thread. Not applied here: that thread's history has it.
   */
  crossPost(ev: ServiceEvent, thread: string): void {
    const copy = { ...ev, session_thread_id: thread }
    this.appends.enqueue(() => this.log.append(copy, { id: ev.id, msgId: `${ev.id}.${thread}` }))
  }

  /**
   * Client events handled: they join the conversation now, and the next stored event carries their ids, one append
   * fewer on the way to the model. `flushProcessed` stores them alone when nothing follows.
   */
  processed(ids: string[]): void {
    this.h.handled(ids)
    this.handled.push(...ids)
  }

  flushProcessed(): void {
    if (!this.handled.length) return
    const rec: ProcessedRecord = { type: '_processed', ids: this.handled.splice(0), processed_at: now() }
    this.appends.enqueue(() => this.log.append(rec))
  }

  /** A model response's preview, published live in order with the stored events around it (never stored). */
  readonly preview: Preview = (type, payload, of) => this.appends.enqueue(async () => this.log.notify(type, payload, of))

  /** A write in order with everything queued so far: the client events of one request are stored inside one. */
  write<T>(fn: () => Promise<T>): Promise<T> {
    return this.appends.write(fn)
  }

  /** Stores one client event (inside `write`): it waits in the mailbox from here. `request`: the POST that stored it. */
  async appendClient(e: ClientEvent, request: RequestTag): Promise<void> {
    await this.log.append(e, { id: e.id, request })
    this.h.apply(e, undefined, request)
  }

  /** Tells live tails the session is gone (its history is about to be purged). */
  deleted(): void {
    this.log.notify('session.deleted', { type: 'session.deleted', id: newId('sevt'), processed_at: now() })
  }
}
