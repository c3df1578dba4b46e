import { fail } from '../../../protocol/errors/fail.js'
import { WorkKind } from '../../../protocol/ops/work.js'
import type { SessionsTokenClaims } from '../../../protocol/sessions-token.js'
import type { StreamOpenReply } from '../../../protocol/events.js'
import type { SessionKind } from '../../../protocol/ops/session.js'
import type { Handlers } from '../../kit/index.js'
import { type Actors, sessionCreate } from './create.js'
import type { ActorDeps } from '../actor/index.js'
import { checkFits, lastSequence } from '../log/index.js'
import { listEvents } from '../log/index.js'
import { resourceOps } from './resources.js'
import { pageOfThreads } from '../threads/index.js'
import { resolveRubrics } from '../admission/index.js'
import { sessionKey, viewOf } from '../history/index.js'

/** Every op of the session kind but `list` (any host answers it, from its projection: see index.ts). */
export function sessionOps(deps: ActorDeps, actors: Actors): Omit<Handlers<typeof SessionKind>, 'list'> {
  const { ctx, store } = deps
  /** The last stored sequence of an existing session, without waking its actor. */
  const lastSeqOf = async (id: string) => {
    const a = actors.peek(id)
    // An append stored (and republished) but not yet acknowledged must count, or a tail that subscribed
    // just after it would neither replay nor receive it.
    if (a) return a.settledSeq()
    const [rec, last] = await Promise.all([store.get(sessionKey(id)), lastSequence(ctx.jsm, id, 'primary')])
    if (!rec) throw fail('session_not_found', id)
    return last
  }
  const live = async (id: string) => {
    const a = await actors.get(id)
    if (!a) throw fail('session_not_found', id)
    return a
  }
  /**
   * A sessions token dies with its claim (issue 29): asked of the work item's owner on every request that presents one
   * (one call per request, not per event: a stream asks when it opens). Gateways also refuse tokens of claims they heard
   * end, without asking; this is the check that does not depend on having heard it.
   */
  const claimHolds = async (token: SessionsTokenClaims | undefined) => {
    if (!token) return
    const { live } = await ctx.client.call(WorkKind.ops['claim.live'], { id: token.e, body: { work_id: token.w, claim: token.n } })
    if (!live) throw fail('sessions_token_invalid', 'ended with its claim on the work item')
  }

  const create = sessionCreate(deps, actors, live)

  return {
    ...resourceOps(deps, (id) => actors.peek(id), live),

    create: (req) => create(req, null),

    // The run's body (its deployment's agent pinned, initial events with system messages) read as a create's.
    'create.run': ({ body: { deployment_id, ...b }, ...req }) => create({ ...req, body: b }, deployment_id),

    async get({ id, token }) {
      await claimHolds(token)
      const a = actors.peek(id)
      if (a) return a.view()
      // Read only (a view is made of it): the record decoded once per revision, not per GET.
      const [cur, work] = await Promise.all([store.peek(sessionKey(id)), deps.actors.hasWork(id)])
      if (!cur) throw fail('session_not_found', id)
      // The record trails the history (it is written once the events it sums up are stored): a host that died
      // in between left it stale. A session with work in flight, or whose record says it had, is answered from
      // its replayed history, and its actor, now awake here, is driven.
      if (cur.value.session.status === 'idle' && !work) return viewOf(cur.value, cur.value.totals)
      const actor = await live(id)
      actor.kick()
      return actor.view()
    },

    async update({ id, body }) {
      return (await live(id)).update(body)
    },

    async archive({ id, rid }) {
      return (await live(id)).archive(rid)
    },

    async delete({ id, rid }) {
      await (await live(id)).delete(rid)
      return { id, type: 'session_deleted' }
    },

    async 'events.send'(req) {
      await claimHolds(req.token)
      const { id } = req
      checkFits(ctx.nc, req.body.events)
      const actor = await live(id)
      const events = await resolveRubrics(deps.files, req.body.events, (i) => `events[${i}]`)
      return { data: await actor.send(events, req, req.body.events) }
    },

    async 'events.list'({ id, query, token }) {
      await claimHolds(token)
      const lastSeq = await lastSeqOf(id)
      const a = actors.peek(id)
      // Half the server's largest message: the page's events, their msgpack framing and the reply envelope fit.
      const maxBytes = Math.floor((ctx.nc.info?.max_payload ?? 1024 * 1024) / 2)
      return listEvents({ js: ctx.js, sessionId: id, lastSeq, maxBytes, queued: a ? (e) => a.isQueued(e) : undefined }, query)
    },

    async 'stream.open'({ id, token }): Promise<StreamOpenReply> {
      await claimHolds(token)
      return { last_seq: await lastSeqOf(id) }
    },

    // Threads answer from the actor, woken if need be: their state is its history's.
    async 'threads.list'({ id, query }) {
      return pageOfThreads(id, (await live(id)).threads(), query)
    },

    async 'threads.get'({ id, sub }) {
      return (await live(id)).thread(sub)
    },

    async 'threads.archive'({ id, sub }) {
      return (await live(id)).archiveThread(sub)
    },

    async 'threads.events'({ id, sub, query }) {
      const { thread, lastSeq } = await (await live(id)).threadSeq(sub)
      const maxBytes = Math.floor((ctx.nc.info?.max_payload ?? 1024 * 1024) / 2)
      return listEvents({ js: ctx.js, sessionId: id, lastSeq, maxBytes, thread }, { limit: query.limit, page: query.page })
    },

    async 'threads.stream.open'({ id, sub }): Promise<StreamOpenReply> {
      return { last_seq: (await (await live(id)).threadSeq(sub)).lastSeq }
    },
  }
}
