import type { Activatable } from './activation.js'
import { Mailbox, type MailboxOptions } from './mailbox.js'
import type { WorkMarks } from './work-marks.js'

/** Where an actor reports that it failed: its kind's Activations, which rebuild it. */
export interface Supervisor<A> {
  crashed(actor: A, own: boolean): void
  /** Where the owner keeps what it knows of its work markers (Activations' `marks`); the mailbox keeps it current. */
  readonly marks?: WorkMarks
}

/**
 * The base of a single-activation actor: its mailbox, and what activation asks of it. A kind adds its state and
 * its operations (each a `this.mb.write`), and overrides `busy` (what keeps it in memory), `kick` and `abandon`
 * when it has work that outlives a request (a session's turn).
 */
export abstract class MailboxActor implements Activatable {
  lastActive = Date.now()
  protected readonly mb: Mailbox

  constructor(
    readonly id: string,
    supervisor: Supervisor<MailboxActor>,
    opts: Omit<MailboxOptions, 'id' | 'onFail'>,
  ) {
    this.mb = new Mailbox({
      ...opts,
      work: { ...opts.work, marks: supervisor.marks },
      id,
      onFail: (own) => {
        this.stopped()
        supervisor.crashed(this, own)
      },
    })
  }

  get dead(): boolean {
    return this.mb.dead
  }

  /** True while it has something to do: it then stays in memory. Default: never (between requests). */
  get busy(): boolean {
    return false
  }

  /** Leaves memory, only when there is nothing to do and nothing left to write. */
  async passivate(): Promise<boolean> {
    if (this.busy) return false
    await this.mb.persisted()
    // Work may have arrived while the record was being written.
    if (this.busy || this.dead) return false
    this.mb.stop()
    this.stopped()
    return true
  }

  /** Stops without writing more; writes already sent may still land, and the next owner must read them. */
  async shutdown(): Promise<void> {
    this.mb.stop()
    this.stopped()
    await this.mb.settled().catch(() => undefined)
  }

  /** Goes on with work in flight (after a rebuild or a takeover). Default: nothing outlives a request. */
  kick(): void {}

  /** Gives up the work in flight after repeated failures. Default: nothing outlives a request. */
  abandon(_message: string): void {}

  /** Called once the actor stopped (failed, passivated or shut down): release what it holds. Default: nothing. */
  protected stopped(): void {}
}
