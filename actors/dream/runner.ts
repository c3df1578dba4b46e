import { isApiError } from '../../protocol/errors/api-error.js'
import { newId } from '../../protocol/ids.js'
import { MemoryStoreKind } from '../../protocol/ops/memory.js'
import { SessionKind } from '../../protocol/ops/session.js'
import type { Session } from '../../protocol/session.js'
import { now } from '../../protocol/time.js'
import type { Work } from '../kit/index.js'
import { isMissing, isTransient, rethrow } from './calls.js'
import { sameUsage, settled, usageOf } from './settle.js'
import { type StartDeps, startStep } from './start.js'
import { type DreamState, ended, hasWork, sessionOf } from './state.js'

/** How often a running dream looks at its session (a cancel wakes it at once). */
const POLL_MS = 1000

/** How the dream's session ended: finished its turn, or stopped short (why). */
type Ending = { ok: true } | { ok: false; message: string }

/** The events that say whether the dream's one message has been answered, and how. */
const ENDING_TYPES = ['user.message', 'session.status_idle', 'session.status_terminated', 'session.error']

/**
 * A dream's work on its owner (the kind's `Work`), a step at a time between its ops: the start (`startStep`), then
 * following its session (a look every second: its usage, and whether its turn ended), then, once the dream is final,
 * stopping a canceled dream's session and letting go of the store an `update_existing` dream holds. Every part is
 * stored before the next, and a takeover resumes from what was stored, so a dream outlives its host's SIGKILL.
 */
export class DreamRunner {
  /** The wait of a dream following its session, by dream id: a cancel ends it at once. */
  private readonly wakers = new Map<string, () => void>()
  /** Dreams whose session this process has sent an interrupt (once is enough; a takeover sends its own). */
  private readonly interrupted = new Set<string>()

  constructor(private readonly deps: StartDeps) {}

  work(): Work<DreamState> {
    return {
      pending: hasWork,
      step: (s) => this.step(s),
      abandon: (s) => abandoned(s),
    }
  }

  /** Ends the wait of `id`'s step, if it is waiting: an op (cancel) is queued behind it. */
  wake(id: string): void {
    this.wakers.get(id)?.()
  }

  private wait(id: string, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer)
        if (this.wakers.get(id) === done) this.wakers.delete(id)
        resolve()
      }
      const timer = setTimeout(done, ms)
      this.wakers.set(id, done)
    })
  }

  private async step(s: DreamState): Promise<DreamState> {
    const d = s.dream!
    const rid = newId('req')
    if (!ended(d)) return d.session_id === null ? startStep(this.deps, s, rid) : this.follow(s, d.session_id, rid)
    if (s.interrupt) return this.stop(s, rid)
    // Final, its session stopped: the store it held goes back (a store deleted since holds nothing).
    await this.deps.client.call(MemoryStoreKind.ops.release, { id: s.held!, rid, body: { dream_id: d.id } }).catch((err: unknown) => {
      if (!isMissing(err)) rethrow(err)
    })
    const { held: _, ...rest } = s
    return rest
  }

  /** The session as it is now; undefined when it does not exist (deleted, or never made); `null` when it cannot be asked now. */
  private async session(id: string, rid: string): Promise<Session | undefined | null> {
    try {
      return await this.deps.client.call(SessionKind.ops.get, { id, rid })
    } catch (err) {
      if (isMissing(err)) return undefined
      if (isTransient(err)) return null
      throw err
    }
  }

  /** A running dream: waits a moment, then its usage from its session's, and its end once the session's turn ended. */
  private async follow(s: DreamState, sid: string, rid: string): Promise<DreamState> {
    const d = s.dream!
    await this.wait(d.id, POLL_MS)
    const session = await this.session(sid, rid)
    if (session === null) return s
    if (session === undefined) return settled(s, 'failed', { type: 'session_error', message: `The dream's session ${sid} was deleted before it finished` })
    const usage = usageOf(session.usage)
    const next = sameUsage(usage, d.usage) ? s : { ...s, dream: { ...d, usage } }
    if (session.status === 'running' || session.status === 'rescheduling') return next
    const end = await this.ending(sid, rid)
    if (!end) return next
    return end.ok ? settled(next, 'completed') : settled(next, 'failed', { type: 'session_error', message: end.message })
  }

  /**
   * How the session's turn ended, from its newest events: undefined while its message is not answered yet (the newest of
   * them is the message itself: the turn has not started, or the session says idle a moment before it does).
   */
  private async ending(sid: string, rid: string): Promise<Ending | undefined> {
    let got: { data: unknown[] }
    try {
      got = await this.deps.client.call(SessionKind.ops['events.list'], { id: sid, rid, query: { order: 'desc', limit: 50, types: ENDING_TYPES } as never })
    } catch (err) {
      if (isTransient(err)) return undefined
      throw err
    }
    let end: Extract<Ending, { ok: false }> | undefined
    for (const e of got.data as Array<{ type: string; stop_reason?: { type: string }; error?: { message: string } }>) {
      if (e.type === 'user.message') break
      if (end === undefined) {
        if (e.type === 'session.status_terminated') end = { ok: false, message: "The dream's session was terminated before it finished" }
        else if (e.type === 'session.status_idle') {
          if (e.stop_reason?.type === 'end_turn') return { ok: true }
          end = { ok: false, message: `The dream's session stopped (${e.stop_reason?.type}) before it finished` }
        }
      } else if (e.type === 'session.error' && e.error) return { ok: false, message: `${end.message}: ${e.error.message}` }
    }
    return end
  }

  /** A canceled dream: its session interrupted and waited for until it stops (its usage followed meanwhile). */
  private async stop(s: DreamState, rid: string): Promise<DreamState> {
    const d = s.dream!
    const sid = sessionOf(d.id)
    const session = await this.session(sid, rid)
    const { interrupt: _, ...done } = s
    if (session === undefined) return done
    if (session === null) {
      await this.wait(d.id, POLL_MS)
      return s
    }
    const usage = usageOf(session.usage)
    const next = sameUsage(usage, d.usage) ? s : { ...s, dream: { ...d, usage } }
    // Idle with its message unanswered: the turn may be about to start, so it is interrupted too (once: an interrupt
    // drops the message queued before it, and may leave no newer event to say so).
    const busy =
      session.status === 'running' || session.status === 'rescheduling' || (!this.interrupted.has(d.id) && (await this.ending(sid, rid)) === undefined)
    if (!busy) {
      this.interrupted.delete(d.id)
      const { interrupt: __, ...stopped } = next
      return stopped
    }
    if (!this.interrupted.has(d.id)) {
      await this.deps.client
        .call(SessionKind.ops['events.send'], { id: sid, rid, body: { events: [{ type: 'user.interrupt' }] } as never })
        .then(() => this.interrupted.add(d.id))
        .catch((err: unknown) => {
          // Archived or deleted meanwhile: it runs no more turns. A moment's failure: the next look sends it again.
          if (!isApiError(err) || err.status >= 500) return
          this.interrupted.add(d.id)
        })
    }
    await this.wait(d.id, POLL_MS)
    return next
  }
}

/**
 * A dream whose work failed again and again on its own: failed, if it had not ended, and holding nothing (the store it
 * held finds it stale: `holding` answers false), so a takeover has nothing to resume.
 */
function abandoned(s: DreamState): DreamState {
  const d = s.dream!
  const dream = ended(d)
    ? d
    : {
        ...d,
        status: 'failed' as const,
        error: { type: 'internal_error', message: 'The dream failed again and again on its host and was given up' },
        ended_at: now(),
      }
  return { dream, ...(s.created_by ? { created_by: s.created_by } : {}) }
}
