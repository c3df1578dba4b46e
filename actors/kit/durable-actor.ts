import { isApiError } from '../../protocol/errors/api-error.js'
import { MailboxActor } from './actor.js'
import type { FencedRecord } from './fenced-record.js'
import type { KeyedActors } from './keyed-actors.js'
import { asMoving } from './mailbox.js'

/** Who an op runs as: the actor's id, the host it lives on, and which activation of it this is. */
export interface Self {
  readonly id: string
  readonly host: string
  /** Numbers the activations of this host (one per load, rebuild or takeover): which one served a request. */
  readonly activation: number
}

/**
 * What an exclusive op decides: its reply, and the new state to store (none: nothing changes, nothing is written), or
 * `delete`: the record is deleted (fenced) and the actor leaves memory, so the id is unknown from then on.
 */
export interface Outcome<S, R> {
  state?: S
  delete?: true
  reply: R
}

/** Work that outlasts a request (a job, a timer): steps run between ops until the state has none left. */
export interface Work<S> {
  /** Whether `state` has work to do. While it does, the actor keeps its work marker and stays in memory. */
  pending(state: S): boolean
  /**
   * One step of the work: the next state, stored like an op's (the same state object back: nothing changed, nothing
   * written). Steps run one at a time until `pending` is false; a step that waits holds the exclusive ops back meanwhile.
   */
  step(state: S, self: Self): S | Promise<S>
  /** The state once the work is given up after the actor failed again and again (`pending` false on it); `why` says why. */
  abandon(state: S, why: string): S
}

/** What the actors of one durable-state kind share on a host. */
export interface Home<S> {
  readonly actors: KeyedActors<DurableActor<S>>
  readonly host: string
  readonly work: Work<S> | undefined
}

/** Numbers activations on this host (`Self.activation`). */
let activations = 0

type Ran<R> = { ok: true; reply: R } | { ok: false; refused: unknown }

/**
 * One actor of a durable-state kind, in memory on the host owning its partition: its state as last stored, ops run
 * one at a time through its mailbox, each new state written fenced by the revision it replaces. Shared ops read the
 * state as last stored, beside the exclusive ones. The state is never changed in place: an op returns a new one,
 * which becomes the state once it is stored.
 */
export class DurableActor<S> extends MailboxActor {
  readonly self: Self
  /** Exclusive ops queued or running: the actor stays in memory until they are done. */
  private inFlight = 0
  private stepping = false

  constructor(
    private readonly home: Home<S>,
    id: string,
    private current: S,
    private readonly record: FencedRecord<S>,
    workMarked: boolean,
  ) {
    super(id, home.actors, home.actors.mailbox(id, workMarked))
    this.self = { id, host: home.host, activation: ++activations }
  }

  get state(): S {
    return this.current
  }

  override get busy(): boolean {
    return this.inFlight > 0 || this.pending(this.current)
  }

  /** A shared op: reads the state as last stored, without waiting for the exclusive ops queued. */
  async read<R>(fn: (state: S, self: Self) => R | Promise<R>): Promise<R> {
    this.mb.alive()
    this.lastActive = Date.now()
    return fn(this.current, this.self)
  }

  /**
   * An exclusive op: runs after the ones queued before it, and its new state is stored before the next one runs. An
   * ApiError it throws is its answer (a refusal: nothing changes, the actor goes on); anything else it throws, or a
   * failed write, stops the actor, which is rebuilt from what was stored. A lost fence or a lapsed heartbeat answers
   * the retryable 503 of an actor moving to another host.
   */
  async write<R>(fn: (state: S, self: Self) => Outcome<S, R> | Promise<Outcome<S, R>>, refusals = true): Promise<R> {
    this.inFlight++
    this.lastActive = Date.now()
    try {
      const ran = await this.mb.write(async (): Promise<Ran<R>> => {
        let out: Outcome<S, R>
        try {
          out = await fn(this.current, this.self)
        } catch (err) {
          if (refusals && isApiError(err)) return { ok: false, refused: err }
          throw err
        }
        if (out.delete) await this.remove()
        else if (out.state !== undefined) await this.commit(out.state)
        return { ok: true, reply: out.reply }
      })
      if (!ran.ok) throw ran.refused
      if (this.pending(this.current)) this.kick()
      return ran.reply
    } catch (err) {
      throw asMoving(this.home.actors.kind)(err)
    } finally {
      this.inFlight--
      this.lastActive = Date.now()
    }
  }

  /** Runs the pending work, a step at a time (after an op left some, a rebuild, or a takeover). */
  override kick(): void {
    this.lastActive = Date.now()
    const work = this.home.work
    if (!work || this.stepping || this.dead) return
    this.stepping = true
    // A step's failure stops the actor: activation rebuilds it and kicks it again, or has it abandon the work.
    this.write(async (s, self) => {
      if (work.pending(s)) {
        // A step that changed nothing (it waited, and found nothing to do yet) writes nothing.
        const next = await work.step(s, self)
        return next === s ? { reply: undefined } : { state: next, reply: undefined }
      }
      // Loaded with a marker and nothing to do (its host died after the work was done): nothing to resume.
      await this.mb.unmarkWork()
      return { reply: undefined }
    }, false)
      .catch(() => undefined)
      .finally(() => {
        this.stepping = false
        if (!this.dead && work.pending(this.current)) this.kick()
      })
  }

  /** Gives the work up: the kind's `abandon` state is stored, which clears the marker. */
  override abandon(why: string): void {
    const work = this.home.work
    if (!work) return
    this.write((s) => (work.pending(s) ? { state: work.abandon(s, why), reply: undefined } : { reply: undefined }), false).catch(() => undefined)
  }

  private pending(state: S): boolean {
    return this.home.work?.pending(state) ?? false
  }

  /** Deletes the record at the revision last stored; ops queued behind answer the 503 of an actor moving, then 404. */
  private async remove(): Promise<void> {
    this.mb.checkServing()
    await this.record.delete(this.current)
    await this.mb.unmarkWork()
    this.mb.stop()
    this.stopped()
    this.home.actors.gone(this)
  }

  /** Stores the op's new state: the marker goes down before a state with work, and is cleared after one without. */
  private async commit(next: S): Promise<void> {
    const pending = this.pending(next)
    if (pending) await this.mb.markWork()
    // Checked again here, not only when the op started: an op that awaited something may have outlived the heartbeat.
    this.mb.checkServing()
    await this.record.write(next, this.current)
    this.current = next
    if (!pending) await this.mb.unmarkWork()
  }
}
