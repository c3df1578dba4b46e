import { ApiError } from '../../../protocol/errors/api-error.js'
import { WorkKind } from '../../../protocol/ops/work.js'
import { type HostContext, isTransientNatsError, retry, retryPolicy } from '../../kit/index.js'
import type { SessionRecord } from '../history/index.js'

/** What the work queue needs of a session: its id, its environment, and whether that environment is self-hosted. */
interface SelfHosted {
  id: string
  environment_id: string
  selfHosted: boolean
}

/**
 * A queue call refused for a moment (the store or the queue's owner away: an election, a host's death, the queue
 * moving) is made again in the background, 250 ms doubling to 5 s, for a minute: a session parked on its worker's
 * tools sends nothing more by itself, so an item lost here would leave it waiting for good (seen in `npm run chaos`
 * under a NATS leader kill).
 */
const queueRetry = retryPolicy({ initialIntervalMs: 250, maximumIntervalMs: 5000, deadlineMs: 60_000 })
const refusedForAMoment = (err: unknown) => (err instanceof ApiError && (err.status === 503 || err.status === 504)) || isTransientNatsError(err)
const unrefSleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref())

/**
 * A self-hosted session's live work item (issue 29 §1): queued at its creation, and again whenever a client sends it
 * events and it has none (its last item stopped: its worker left after the session went idle). The queue op keeps at
 * most one live item per session, and answers without a write when there is one, so a repeated call is harmless.
 * The first attempt is awaited; one refused for a moment is made again in the background (`queueRetry`), except a
 * turn's "no worker needed" (`need: false`, which only spares a successor: losing it costs one idle claim). Any other
 * failure is logged, not answered: the session is stored by then, and its next send queues again.
 */
export async function queueWork(ctx: HostContext, s: SelfHosted, rid: string | undefined, need?: boolean): Promise<void> {
  if (!s.selfHosted) return
  const body = need === undefined ? { session_id: s.id } : { session_id: s.id, need }
  const call = () => ctx.client.call(WorkKind.ops.queue, { id: s.environment_id, body, ...(rid ? { rid } : {}) })
  const lost = (err: unknown) => ctx.log.warn({ err, rid, session: s.id }, 'work item not queued; the next events sent to the session queue it')
  try {
    await call()
  } catch (err) {
    if (need === false || !refusedForAMoment(err)) return lost(err)
    ctx.log.info({ err, rid, session: s.id }, 'work item not queued yet; trying again')
    void retry(queueRetry, call, { retryable: refusedForAMoment, clock: { now: Date.now, sleep: unrefSleep } }).catch(lost)
  }
}

/** The session's live item stops: gracefully on `user.interrupt`, at once (`force`) on archive and delete. */
export async function stopWork(ctx: HostContext, s: SelfHosted, force: boolean, rid: string): Promise<void> {
  if (!s.selfHosted) return
  await ctx.client.call(WorkKind.ops['session.stop'], { id: s.environment_id, body: { session_id: s.id, force }, rid }).catch((err) => {
    ctx.log.warn({ err, rid, session: s.id }, 'work item not stopped')
  })
}

/**
 * A send's effect on the work queue: an interrupt of the whole session (naming no thread) stops the live item, anything
 * else needs one.
 */
export async function workAfterSend(
  ctx: HostContext,
  s: SelfHosted,
  events: readonly { type: string; session_thread_id?: unknown }[],
  rid: string,
): Promise<void> {
  if (!s.selfHosted) return
  if (events.some((e) => e.type === 'user.interrupt' && e.session_thread_id == null)) await stopWork(ctx, s, false, rid)
  if (events.some((e) => e.type !== 'user.interrupt')) await queueWork(ctx, s, rid)
}

/**
 * A turn went idle: parked on tools (`requires_action`), the session needs a worker until they are answered, even if
 * the one it has is leaving right now (its runner gave up on the idle session just as the input came); ended, it needs
 * none. Not awaited by the turn: the queue answers on its own time.
 */
export function workAfterTurn(ctx: HostContext, s: SelfHosted, stop: { type: string }, rid: string | undefined): void {
  void queueWork(ctx, s, rid, stop.type === 'requires_action')
}

/** What the work queue hooks need of a session record. */
export const selfHostedOf = (rec: SessionRecord): SelfHosted => ({
  id: rec.session.id,
  environment_id: rec.session.environment_id,
  selfHosted: rec.env.type === 'self_hosted',
})
