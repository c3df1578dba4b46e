import type { Logger } from 'pino'
import type { Clock } from '../../../protocol/clock.js'
import { isApiError } from '../../../protocol/errors/api-error.js'
import type { FireReply } from '../../../protocol/ops/deployment.js'
import { type Claims, claimKey } from './claims.js'
import { nextToFire } from './occurrences.js'
import type { Scheduled } from './schedules.js'
import { TimerQueue } from './timer-queue.js'
import { countFire } from './metrics.js'

export interface SchedulerOptions {
  self: string
  clock: Clock
  log: Logger
  claims: Claims
  /** The live scheduler an occurrence's claim key prefers (the roster's rendezvous). */
  preferred(key: string): string
  /** Asks the deployment's owner to fire one occurrence (`DeploymentKind.ops.fire`). */
  fire(id: string, scheduledAt: string): Promise<FireReply>
  /** Occurrences being claimed or fired at once. Default 64. */
  concurrency?: number
  /** How long (real ms) a scheduler that is not preferred waits for the preferred one before claiming. Default 2000. */
  graceMs?: number
}

/** A deployment that fires, and the occurrence it handles now. */
interface Track {
  s: Scheduled
  /** The occurrence to fire next (clock ms); undefined when the schedule never fires again. */
  at: number | undefined
  /** `look`: first look at `at` (the preferred scheduler claims, the others wait a grace); `claim`: claim now. */
  phase: 'look' | 'claim'
  failures: number
}

/** The longest pause (real ms) between attempts at an occurrence whose claim or fire failed. */
const MAX_BACKOFF_MS = 5000

/**
 * Fires every deployment's occurrences, once each, oldest first (`occurrences.ts`), across any number of schedulers.
 * Each deployment has one occurrence in hand at a time, in a timer queue. When it is due, the scheduler the claim key
 * prefers claims it at once and the others wait a grace: so one claim per occurrence normally, and a dead or slow
 * scheduler's share is taken by the rest. A claim is a lease (`claims.ts`); its holder fires, marks it done and moves
 * on; the others move on when they see it done (the claims watch) or the deployment's `last_scheduled_at` pass it. One
 * held by someone else is looked at again when its lease ends, and taken over if still not done.
 */
export class Scheduler {
  private readonly tracks = new Map<string, Track>()
  private readonly queue: TimerQueue
  /** Occurrences due, waiting for a free slot. */
  private ready: Array<{ id: string; at: number }> = []
  private readyHead = 0
  private running = 0
  private readonly concurrency: number
  private readonly graceMs: number
  private stopped = false

  constructor(private readonly o: SchedulerOptions) {
    this.concurrency = o.concurrency ?? 64
    this.graceMs = o.graceMs ?? 2000
    this.queue = new TimerQueue(o.clock, (id, at) => this.due(id, at))
  }

  /** A deployment's schedule as its record now says (undefined: it does not fire). */
  update(id: string, s: Scheduled | undefined): void {
    const t = this.tracks.get(id)
    if (!s) {
      this.tracks.delete(id)
      this.queue.delete(id)
      return
    }
    if (!t) {
      this.tracks.set(id, { s, at: undefined, phase: 'look', failures: 0 })
      this.advance(id, Number.NEGATIVE_INFINITY)
      return
    }
    const changed = t.s.firesFrom !== s.firesFrom || t.s.schedule.expression !== s.schedule.expression || t.s.schedule.timezone !== s.schedule.timezone
    t.s = s
    if (changed) this.advance(id, Number.NEGATIVE_INFINITY)
    else if (t.at !== undefined && s.lastScheduled >= t.at) this.advance(id, t.at)
  }

  /** Occurrence `at` of deployment `id` is done (fired by anyone): move on. */
  done(id: string, at: number): void {
    if (this.tracks.get(id)?.at === at) this.advance(id, at)
  }

  /** Deployments that fire, and occurrences in the timer queue: for tests and logs. */
  get counts() {
    return { deployments: this.tracks.size, queued: this.queue.size, running: this.running, ready: this.ready.length - this.readyHead }
  }

  stop(): void {
    this.stopped = true
    this.queue.stop()
  }

  private advance(id: string, after: number): void {
    const t = this.tracks.get(id)!
    t.at = nextToFire(t.s, after, this.o.clock())
    t.phase = 'look'
    t.failures = 0
    if (t.at === undefined) this.queue.delete(id)
    else this.queue.set(id, t.at)
  }

  /** Real ms as clock ms. */
  private clockMs(realMs: number): number {
    return realMs * (this.o.clock.rate ?? 1)
  }

  private due(id: string, at: number): void {
    const t = this.tracks.get(id)
    if (!t || t.at === undefined) return
    if (t.phase === 'look' && this.o.preferred(claimKey(id, t.at)) !== this.o.self) {
      t.phase = 'claim'
      this.queue.set(id, Math.max(at, this.o.clock()) + this.clockMs(this.graceMs))
      return
    }
    this.ready.push({ id, at: t.at })
    this.pump()
  }

  private pump(): void {
    while (this.running < this.concurrency && this.readyHead < this.ready.length && !this.stopped) {
      const next = this.ready[this.readyHead++]!
      this.running++
      void this.handle(next.id, next.at).finally(() => {
        this.running--
        this.pump()
      })
    }
    if (this.readyHead > 1024 && this.readyHead * 2 > this.ready.length) {
      this.ready = this.ready.slice(this.readyHead)
      this.readyHead = 0
    }
  }

  private current(id: string, at: number): Track | undefined {
    const t = this.tracks.get(id)
    return t?.at === at && !this.stopped ? t : undefined
  }

  private async handle(id: string, at: number): Promise<void> {
    if (!this.current(id, at)) return
    let step = 'claim'
    try {
      const claim = await this.o.claims.claim(id, at)
      if (claim.kind === 'done') return this.done(id, at)
      const t = this.current(id, at)
      if (!t) return
      if (claim.kind === 'held') {
        // Looked at again when the lease ends, unless seen done first.
        t.phase = 'claim'
        this.queue.set(id, claim.until + 1)
        return
      }
      step = 'fire'
      // Late by this much, in real seconds (a test clock may run faster): waiting for a slot, a grace, a claim.
      const lateS = Math.max(0, this.o.clock() - at) / (this.o.clock.rate ?? 1) / 1000
      const reply = await this.fire(id, at)
      countFire(reply.outcome, lateS)
      step = 'mark done'
      await this.o.claims.done(id, at, reply.outcome)
      this.done(id, at)
    } catch (err) {
      const t = this.current(id, at)
      if (!t) return
      t.failures++
      t.phase = 'claim'
      const pauseMs = Math.min(MAX_BACKOFF_MS, 100 * 2 ** t.failures)
      this.o.log.warn(
        { err, deployment: id, scheduled_at: new Date(at).toISOString(), failures: t.failures },
        `scheduler: ${step} failed; again in ${pauseMs} ms`,
      )
      this.queue.set(id, this.o.clock() + this.clockMs(pauseMs))
    }
  }

  /**
   * Fires one occurrence. A refusal that is final (4xx: the deployment is gone, a body its owner refuses) is the
   * occurrence's end, as a skip: trying it again would only be refused again. Anything transient (a failover, the store
   * unavailable, no answer in time) is thrown, to be tried again under the lease.
   */
  private async fire(id: string, at: number): Promise<FireReply> {
    try {
      return await this.o.fire(id, new Date(at).toISOString())
    } catch (err) {
      if (!isApiError(err) || err.status >= 500 || err.status === 429) throw err
      this.o.log.warn(
        { deployment: id, scheduled_at: new Date(at).toISOString(), err: err.message, status: err.status },
        'scheduler: fire refused; occurrence dropped',
      )
      return { outcome: 'skipped', why: err.message }
    }
  }
}
