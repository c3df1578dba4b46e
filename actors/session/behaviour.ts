import type { ActorRequest } from '../../protocol/envelope.js'
import { conflict, invalidRequest, notFound } from '../../protocol/errors.js'
import { decodeCursor, encodeCursor } from '../../protocol/cursor.js'
import { isInternalType, type SessionEvent, type StreamOpenReply } from '../../protocol/events.js'
import { newId } from '../../protocol/ids.js'
import type { EventsListInput, EventsSendInput } from '../../protocol/schemas/events.js'
import type { SessionCreateInput, SessionUpdateInput } from '../../protocol/schemas/session.js'
import { patchMetadata, sameJson } from '../../protocol/schemas/common.js'
import type { Environment } from '../../protocol/schemas/environment.js'
import type { Session } from '../../protocol/session.js'
import { actorSubject } from '../../protocol/subjects.js'
import { now } from '../../protocol/time.js'
import { budgetCents, checkBudgetUpdate, emptyUsage, formatAmount, listCostCents, toWireUsage, type BudgetErrorCode } from '../../protocol/usage.js'
import { checkToolGraph, normalizeServers, normalizeTools } from '../agent/normalize.js'
import { checkCreateInput, checkEnvironment, modelsOf, prefixed, snapshotAgent } from './admission.js'
import { SessionActor, viewOf } from './actor.js'
import type { ActorDeps } from './actor.js'
import { lastSequence, readSession } from './log.js'
import { checkClientEvents } from './rules.js'
import { sessionKey, type SessionRecord } from './state.js'

type Req<B = unknown, Q = unknown> = ActorRequest<B, Q>
export type SessionOp = (id: string, req: Req<any, any>) => Promise<unknown>

export interface Actors {
  /** The live actor of a session, loading it (replaying its history) when needed; undefined if none exists. */
  get(id: string): Promise<SessionActor | undefined>
  /** The actor if it is in memory now; reads of idle sessions need no replay. */
  peek(id: string): SessionActor | undefined
  /** A session created here: its actor starts in memory. */
  add(actor: SessionActor): void
}

const missing = (id: string) => notFound('Session', id, 'session_not_found')

export function sessionOps(deps: ActorDeps, actors: Actors): Record<string, SessionOp> {
  const { ctx, store } = deps
  /** The last stored sequence of an existing session, without waking its actor. */
  const lastSeqOf = async (id: string) => {
    const a = actors.peek(id)
    // An append stored (and republished) but not yet acknowledged must count, or a tail that subscribed
    // just after it would neither replay nor receive it.
    if (a) return a.settledSeq()
    if (!(await store.get(sessionKey(id)))) throw missing(id)
    return lastSequence(ctx.jsm, id)
  }
  const live = async (id: string) => {
    const a = await actors.get(id)
    if (!a) throw missing(id)
    return a
  }

  return {
    async create(id, req: Req<SessionCreateInput>) {
      const b = req.body
      const agent = await snapshotAgent(ctx, b.agent)
      checkCreateInput(b, agent)
      const env = await ctx.ask<Environment>(actorSubject('environment', 'acquire'), {
        op: 'acquire', params: { environment_id: b.environment_id }, query: {}, body: {},
      })
      const release = () => ctx.ask(actorSubject('environment', 'release'), { op: 'release', params: { environment_id: env.id }, query: {}, body: {} })
        .catch((err) => ctx.log.warn({ err, env: env.id }, 'environment reference not released'))
      try {
        checkEnvironment(env)
      } catch (err) {
        await release()
        throw err
      }
      const t = now()
      const budget = b.budget ?? null
      const initial: SessionEvent[] = (b.initial_events ?? []).map((e) => ({ ...e, id: newId('sevt'), processed_at: null }))
      const session: Session = {
        id, type: 'session', status: 'idle', agent, environment_id: env.id, title: b.title ?? null, metadata: b.metadata ?? {},
        budget, resources: [], vault_ids: [], outcome_evaluations: [],
        stats: { active_seconds: 0, duration_seconds: 0 }, usage: toWireUsage(emptyUsage()),
        deployment_id: null, created_at: t, updated_at: t, archived_at: null,
      }
      const rec: SessionRecord = {
        session, env: env.config, totals: emptyUsage(), budget_created: budget !== null, budget_removed: false, running_since: null,
      }
      const rev = await store.create(sessionKey(id), rec).catch(async (err) => {
        await release()
        throw err
      })
      if (rev === false) {
        await release()
        throw conflict(`Session ${id} already exists`)
      }
      const actor = SessionActor.fresh(deps, rec, rev)
      actors.add(actor)
      if (initial.length) {
        await actor.accept(initial)
        // The turn starts at once; the reply says so even if the first status event is a moment away.
        return { ...actor.view(), status: 'running' }
      }
      return actor.view()
    },

    async get(id) {
      const a = actors.peek(id)
      if (a) return a.view()
      const cur = await store.get(sessionKey(id))
      if (!cur) throw missing(id)
      return viewOf(cur.value, cur.value.totals)
    },

    async update(id, req: Req<SessionUpdateInput>) {
      const actor = await live(id)
      const b = req.body
      const h = actor.h
      const s = h.session
      if (s.archived_at) throw conflict(`Session ${id} is archived and cannot be updated`, 'session_archived')
      const changes: Record<string, unknown> = {}
      if (b.title !== undefined && b.title !== s.title) changes.title = b.title
      if (b.metadata) {
        const m = patchMetadata(s.metadata, b.metadata)
        if (!sameJson(m, s.metadata)) changes.metadata = m
      }
      if (b.agent) {
        if (actor.isRunning() || h.pending.size > 0) {
          throw conflict(`Session ${id} is running; agent changes need an idle session (send user.interrupt first)`, 'session_running')
        }
        const tools = b.agent.tools !== undefined ? normalizeTools(b.agent.tools ?? []) : s.agent.tools
        const servers = b.agent.mcp_servers !== undefined ? normalizeServers(b.agent.mcp_servers ?? []) : s.agent.mcp_servers
        prefixed('agent.', () => checkToolGraph(tools, servers))
        const agent = { ...s.agent, tools, mcp_servers: servers }
        if (!sameJson(agent, s.agent)) changes.agent = agent
      }
      if (b.budget !== undefined) {
        const next = b.budget === null ? null : budgetCents(b.budget)!
        const current = s.budget ? budgetCents(s.budget)! : null
        const consumed = h.liveTotals()
        const code = checkBudgetUpdate({
          createdWithBudget: h.rec.budget_created, budgetRemoved: h.rec.budget_removed, current, next,
          consumedCents: consumed, models: modelsOf(s.agent),
        })
        if (code) throw invalidRequest(budgetMessage(code, listCostCents(consumed)), code)
        if (next !== current) changes.budget = b.budget
      }
      if (Object.keys(changes).length) {
        await actor.record('session.updated', changes)
        await actor.save()
        if ('budget' in changes) await actor.resumeIfPaused()
      }
      return actor.view()
    },

    async archive(id) {
      const actor = await live(id)
      const s = actor.h.session
      if (s.archived_at) return actor.view()
      // Input waiting in the mailbox is a turn about to start: archiving now would strand it (as for agent updates).
      if (actor.isRunning() || actor.h.pending.size > 0) {
        throw conflict(`Session ${id} is running; interrupt it before archiving (send user.interrupt)`, 'session_running')
      }
      s.archived_at = now()
      await actor.record('session.status_terminated', {})
      await actor.save()
      return actor.view()
    },

    async delete(id) {
      const actor = await live(id)
      await actor.destroy()
      return { id, type: 'session_deleted' }
    },

    async 'events.send'(id, req: Req<EventsSendInput>) {
      const actor = await live(id)
      checkClientEvents(actor.h, req.body.events)
      const stored: SessionEvent[] = req.body.events.map((e) => ({ ...e, id: newId('sevt'), processed_at: null }))
      await actor.accept(stored)
      return { data: stored }
    },

    async 'events.list'(id, req: Req<unknown, EventsListInput>) {
      return listEvents(deps, id, await lastSeqOf(id), req.query)
    },

    async 'stream.open'(id): Promise<StreamOpenReply> {
      return { last_seq: await lastSeqOf(id) }
    },
  }
}

function budgetMessage(code: BudgetErrorCode, consumedCents: number): string {
  switch (code) {
    case 'budget_create_only':
      return 'budget: a budget can only be replaced or removed; this session was created without one, or its budget was removed'
    case 'budget_not_raised':
      return `budget.max_list_cost.amount: the new maximum must be greater than the list cost already consumed (${formatAmount(consumedCents)} cents, rounded)`
    case 'model_not_budgetable':
      return 'budget: every model of this session needs a known list price to be budgeted'
  }
}

/**
 * The history, oldest first by default (WIRE §7). processed_at comes from the event that marked a client event
 * handled (protocol/events.ts); `created_at` bounds compare against it. The cursor is the stream sequence of the last
 * event handed out, bound to the filters.
 */
async function listEvents(deps: ActorDeps, id: string, lastSeq: number, q: EventsListInput) {
  const order = q.order ?? 'asc'
  const limit = q.limit ?? 100
  const filters = {
    order, types: q.types ? [...q.types].sort() : undefined,
    gt: q['created_at[gt]']?.toISOString(), gte: q['created_at[gte]']?.toISOString(),
    lt: q['created_at[lt]']?.toISOString(), lte: q['created_at[lte]']?.toISOString(),
  }
  const resource = `session_events:${id}`
  const after = decodeCursor<number>(resource, filters, q.page)
  const last = lastSeq
  const all: Array<{ seq: number; event: SessionEvent }> = []
  const byId = new Map<string, SessionEvent>()
  await readSession(deps.ctx.js, id, last, (r) => {
    const handled = r.type === '_processed' ? (r.event as unknown as { ids: string[] }).ids : r.processed ?? []
    for (const pid of handled) {
      const e = byId.get(pid)
      if (e) e.processed_at = r.event.processed_at
    }
    if (!isInternalType(r.type)) {
      all.push({ seq: r.seq, event: r.event })
      byId.set(r.event.id, r.event)
    }
  })
  const types = q.types ? new Set(q.types) : undefined
  const bounded = filters.gt || filters.gte || filters.lt || filters.lte
  const keep = (e: SessionEvent) => {
    if (types && !types.has(e.type as never)) return false
    if (!bounded) return true
    if (!e.processed_at) return false
    const t = e.processed_at
    return (!filters.gt || t > filters.gt) && (!filters.gte || t >= filters.gte) && (!filters.lt || t < filters.lt) && (!filters.lte || t <= filters.lte)
  }
  let rows = all.filter((r) => keep(r.event))
  if (order === 'desc') rows.reverse()
  if (after !== undefined) rows = rows.filter((r) => (order === 'asc' ? r.seq > after : r.seq < after))
  const page = rows.slice(0, limit)
  const next_page = rows.length > limit ? encodeCursor(resource, filters, page[page.length - 1]!.seq) : null
  return { data: page.map((r) => r.event), next_page }
}
