import { WorkKind } from '../../protocol/ops/work.js'
import type { HostContext } from '../kit/types.js'

/** What the work queue needs of a session: its id, its environment, and whether that environment is self-hosted. */
interface SelfHosted {
  id: string
  environment_id: string
  selfHosted: boolean
}

/**
 * A self-hosted session's live work item (issue 29 §1): queued at its creation, and again whenever a client sends it
 * events and it has none (its last item stopped: its worker left after the session went idle). The queue op keeps at
 * most one live item per session, and answers without a write when there is one. A failure is logged, not answered:
 * the session is stored by then, and its next send queues again.
 */
export async function queueWork(ctx: HostContext, s: SelfHosted, rid: string): Promise<void> {
  if (!s.selfHosted) return
  await ctx.client.call(WorkKind.ops.queue, { id: s.environment_id, body: { session_id: s.id }, rid }).catch((err) => {
    ctx.log.warn({ err, rid, session: s.id }, 'work item not queued; the next events sent to the session queue it')
  })
}

/** The session's live item stops: gracefully on `user.interrupt`, at once (`force`) on archive and delete. */
export async function stopWork(ctx: HostContext, s: SelfHosted, force: boolean, rid: string): Promise<void> {
  if (!s.selfHosted) return
  await ctx.client.call(WorkKind.ops['session.stop'], { id: s.environment_id, body: { session_id: s.id, force }, rid }).catch((err) => {
    ctx.log.warn({ err, rid, session: s.id }, 'work item not stopped')
  })
}

/** A send's effect on the work queue: an interrupt stops the live item, anything else needs one. */
export async function workAfterSend(ctx: HostContext, s: SelfHosted, events: readonly { type: string }[], rid: string): Promise<void> {
  if (!s.selfHosted) return
  if (events.some((e) => e.type === 'user.interrupt')) await stopWork(ctx, s, false, rid)
  if (events.some((e) => e.type !== 'user.interrupt')) await queueWork(ctx, s, rid)
}
