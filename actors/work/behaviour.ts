import { ArkErrors } from 'arktype'
import { isApiError } from '../../protocol/errors/api-error.js'
import { fail } from '../../protocol/errors/fail.js'
import { newId } from '../../protocol/ids.js'
import { EnvironmentKind } from '../../protocol/ops/environment.js'
import type { WorkKind } from '../../protocol/ops/work.js'
import { MetadataPatch, patchMetadata } from '../../protocol/schemas/common.js'
import { RECLAIM_DEFAULT_MS, type WorkQueueStats } from '../../protocol/schemas/work.js'
import { WORK_CLAIM_ENDED } from '../../protocol/subjects.js'
import { SESSIONS_TOKEN_TTL_S, signSessionsToken, workSecret } from '../../protocol/sessions-token.js'
import { type DurableState, type Handlers, type HostContext, listOf, pageOf } from '../kit/index.js'
import { acked, beat, find, handOut, type Item, isLive, lapse, newItem, nextChange, type Queue, replace, stop, successors, takeable, view } from './state.js'
import { LeaseTimers } from './timers.js'
import { RecentWorkers, Waiters } from './waiters.js'

/** Whether a lapse put an item back in the queue. */
function requeuedAny(before: Queue, after: Queue): boolean {
  const queued = new Set(before.items.filter((i) => i.state === 'queued').map((i) => i.id))
  return after.items.some((i) => i.state === 'queued' && !queued.has(i.id))
}

/**
 * The claims a step ended: an item stopped, queued again by a lapse, or handed out again (its pending claim
 * reclaimed). Their sessions tokens die with them (gateway/ended-claims.ts).
 */
function endedClaims(before: Queue, after: Queue): Array<{ w: string; n: number }> {
  const now = new Map(after.items.map((i) => [i.id, i]))
  const out: Array<{ w: string; n: number }> = []
  for (const b of before.items) {
    if (b.claim === 0 || b.state === 'stopped' || (b.state === 'queued' && b.handed_at === null)) continue
    const a = now.get(b.id)
    if (!a || a.state === 'stopped' || a.claim !== b.claim || (a.state === 'queued' && b.state !== 'queued')) out.push({ w: b.id, n: b.claim })
  }
  return out
}

/** What an exclusive step decides: the new queue (none: unchanged), its reply, and whether a blocked poll may now take something. */
interface Step<R> {
  q?: Queue
  reply: R
  wake?: boolean
}

export interface WorkDeps {
  ctx: HostContext
  queues: DurableState<Queue, typeof WorkKind>
  tokenKey: Uint8Array
}

/** The work queue's handlers on this host, and what they hold in memory (blocked polls, recent workers, lease timers). */
export function workOps({ ctx, queues, tokenKey }: WorkDeps): { handlers: Handlers<typeof WorkKind>; close(): void } {
  const waiters = new Waiters()
  const workers = new RecentWorkers()
  const known = new Set<string>()
  const timers = new LeaseTimers((env) => run(env, () => ({ reply: undefined })).catch(() => undefined))

  /**
   * One exclusive step on an environment's queue, after the leases that lapsed by now are applied (stored with the
   * step's change, or alone); blocked polls are woken when an item became takeable, and the next lapse is timed.
   */
  async function run<R>(env: string, fn: (q: Queue, now: number) => Step<R>): Promise<R> {
    let wake = false
    let after: Queue | undefined
    let ended: Array<{ w: string; n: number }> = []
    const reply = await queues.exclusive(env, (q0) => {
      const now = Date.now()
      const q1 = lapse(q0, now)
      const out = fn(q1, now)
      const next = successors(out.q ?? q1, now, () => newId('work'))
      after = next.q
      wake = !!out.wake || next.queued || (q1 !== q0 && requeuedAny(q0, q1))
      ended = after === q0 ? [] : endedClaims(q0, after)
      return after === q0 ? { reply: out.reply } : { state: after, reply: out.reply }
    })
    for (const c of ended) ctx.nc.publish(WORK_CLAIM_ENDED, JSON.stringify(c))
    if (after) timers.arm(env, after)
    if (wake) waiters.wake(env)
    return reply
  }

  /** The queue as of now, lapses applied but not stored (reads). */
  const current = async (env: string) => lapse((await queues.read(env)) ?? { items: [] }, Date.now())

  /** 404 for an environment that does not exist, asked once per environment per host. */
  async function checkEnv(env: string): Promise<void> {
    if (known.has(env)) return
    await ctx.client.call(EnvironmentKind.ops.get, { id: env })
    known.add(env)
  }

  const secret = (env: string, it: Item) =>
    workSecret(signSessionsToken(tokenKey, { e: env, w: it.id, s: it.session_id, n: it.claim, x: Math.floor(Date.now() / 1000) + SESSIONS_TOKEN_TTL_S }))

  const handlers: Handlers<typeof WorkKind> = {
    async poll({ id: env, query, headers }) {
      await checkEnv(env)
      const worker = headers['anthropic-worker-id']
      if (worker) workers.saw(env, worker, Date.now())
      const reclaim = query.reclaim_older_than_ms ?? RECLAIM_DEFAULT_MS
      const deadline = Date.now() + (query.block_ms ?? 0)
      for (;;) {
        // Looked at first without the mailbox: an empty poll (most of them) writes nothing and waits on no one's op.
        const waiting = waiters.arm(env)
        const q = await current(env)
        const now = Date.now()
        if (takeable(q, now, reclaim)) {
          waiting.cancel()
          const got = await run(env, (q, now) => {
            const it = takeable(q, now, reclaim)
            if (!it) return { reply: undefined }
            const out = handOut(it, now)
            return { q: replace(q, out), reply: out }
          })
          if (got) return view(env, got, secret(env, got))
          continue
        }
        const left = deadline - now
        if (left <= 0) {
          waiting.cancel()
          return null
        }
        await waiting.wait(Math.min(left, nextChange(q, now, reclaim) - now))
      }
    },

    async stats({ id: env }): Promise<WorkQueueStats> {
      await checkEnv(env)
      const q = await current(env)
      const queued = q.items.filter((i) => i.state === 'queued')
      const pending = queued.filter((i) => i.handed_at !== null).length
      return {
        type: 'work_queue_stats',
        depth: queued.length - pending,
        pending,
        oldest_queued_at: queued.reduce<string | null>((m, i) => (m === null || i.created_at < m ? i.created_at : m), null),
        workers_polling: workers.count(env, Date.now()),
      }
    },

    async list({ id: env, query }) {
      await checkEnv(env)
      const q = await current(env)
      return pageOf(
        listOf(q.items),
        'work',
        { environment_id: env },
        query.page,
        query.limit ?? 20,
        () => true,
        (it) => view(env, it),
      )
    },

    async get({ id: env, sub }) {
      return view(env, find(await current(env), sub, env))
    },

    update({ id: env, sub, body }) {
      const patch = MetadataPatch(body.metadata)
      if (patch instanceof ArkErrors) throw fail('invalid_metadata', patch.summary)
      return run(env, (q) => {
        const it = find(q, sub, env)
        let metadata: Record<string, string>
        try {
          metadata = patchMetadata(it.metadata, patch)
        } catch (err) {
          throw isApiError(err) ? fail('invalid_metadata', err.message.replace(/^metadata: /, '')) : err
        }
        const next = { ...it, metadata }
        return { q: replace(q, next), reply: view(env, next) }
      })
    },

    ack({ id: env, sub }) {
      return run(env, (q, now) => {
        const it = find(q, sub, env)
        const next = acked(it, now)
        return { q: next === it ? q : replace(q, next), reply: view(env, next) }
      })
    },

    heartbeat({ id: env, sub, query, token }) {
      return run(env, (q, now) => {
        const it = find(q, sub, env)
        const { item, extended } = beat(it, now, query.expected_last_heartbeat, query.desired_ttl_seconds, token?.n)
        return {
          q: item === it ? q : replace(q, item),
          reply: {
            type: 'work_heartbeat' as const,
            last_heartbeat: item.last_heartbeat ?? '',
            lease_extended: extended,
            state: item.state,
            ttl_seconds: item.ttl_seconds,
          },
        }
      })
    },

    stop({ id: env, sub, body, token }) {
      return run(env, (q, now) => {
        const it = find(q, sub, env)
        // A token of an earlier claim stops nothing: its holder lost the lease, and the item may be another's now.
        if (token && token.n !== it.claim && it.state !== 'stopped') {
          throw fail('heartbeat_precondition_failed', it.id, {
            last_heartbeat: it.last_heartbeat,
            lease_extended: false,
            state: it.state,
            ttl_seconds: it.ttl_seconds,
          })
        }
        const next = stop(it, now, body?.force ?? false)
        return { q: next === it ? q : replace(q, next), reply: view(env, next) }
      })
    },

    queue({ id: env, body }) {
      return run(env, (q, now) => {
        const live = q.items.find((i) => i.session_id === body.session_id && isLive(i))
        // The turn ended without tools waiting: whatever its worker does next, no successor is owed.
        if (body.need === false)
          return live?.again ? { q: replace(q, { ...live, again: false }), reply: view(env, live) } : { reply: live ? view(env, live) : null }
        // Tools wait (`need`), or input came while the worker is leaving (stopping): if the live item stops before
        // they are answered, its successor is queued then (state.ts#successors).
        const owed = body.need === true || live?.state === 'stopping'
        if (live && owed && !live.again) return { q: replace(q, { ...live, again: true }), reply: view(env, live) }
        if (live) return { reply: view(env, live) }
        const it = newItem(newId('work'), body.session_id, now)
        return { q: { items: [...q.items, it] }, reply: view(env, it), wake: true }
      })
    },

    // Read as of now, lapses applied (nothing stored): a claim holds while its item is held under it.
    async 'claim.live'({ id: env, body }) {
      const it = (await current(env)).items.find((i) => i.id === body.work_id)
      // Handed out (pending its ack), acked, beating or asked to stop: the claim holds. A lapse requeues the item (no
      // longer handed out), a later poll makes another claim, a stop ends it.
      const held = !!it && it.claim === body.claim && isLive(it) && !(it.state === 'queued' && it.handed_at === null)
      return { live: held }
    },

    'session.stop'({ id: env, body }) {
      return run(env, (q, now) => {
        const live = q.items.find((i) => i.session_id === body.session_id && isLive(i))
        if (!live) return { reply: null }
        // Archived or deleted (`force`): nothing follows it.
        const stopped = stop(live, now, body.force)
        const next = body.force && stopped.again ? { ...stopped, again: false } : stopped
        return { q: next === live ? q : replace(q, next), reply: view(env, next) }
      })
    },
  }
  return {
    handlers,
    close() {
      timers.close()
      waiters.close()
    },
  }
}
