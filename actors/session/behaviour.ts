import { fail, inField } from '../../protocol/errors/fail.js'
import { fingerprint } from '../../protocol/hash.js'
import { WorkKind } from '../../protocol/ops/work.js'
import type { SessionsTokenClaims } from '../../protocol/sessions-token.js'
import type { StreamOpenReply } from '../../protocol/events.js'
import type { SessionKind } from '../../protocol/ops/session.js'
import type { SessionCreateInput } from '../../protocol/schemas/session.js'
import type { DeploymentInitialEvent } from '../../protocol/schemas/deployment.js'
import { FencedRecord } from '../kit/fenced-record.js'
import type { Handlers, OpInput } from '../kit/ops.js'
import { patchMetadata, sameJson } from '../../protocol/schemas/common.js'
import type { SessionResource } from '../../protocol/schemas/resource.js'
import type { Session } from '../../protocol/session.js'
import { now } from '../../protocol/time.js'
import { budgetCents, checkBudgetUpdate } from './billing/budget.js'
import { listCostCents } from './billing/list-cost.js'
import { emptyUsage } from './billing/usage.js'
import { toWireUsage } from './billing/wire-usage.js'
import { checkSkillRequirements, checkToolGraph, normalizeServers, normalizeTools } from '../agent/normalize.js'
import { checkCoordinatorToolNames } from '../agent/roster.js'
import {
  capturedAgents,
  checkCreateInput,
  checkEnvironment,
  checkSkillsRun,
  checkVaultRefs,
  modelNames,
  sandboxTraits,
  modelsOf,
  prefixed,
  snapshotAgent,
} from './admission.js'
import { pinSessionSkills, requestedSkills, skillRefs, unpinSessionSkills } from './skills.js'
import { SessionActor } from './actor.js'
import type { ActorDeps } from './deps.js'
import { checkFits, lastSequence } from './log.js'
import { listEvents } from './pages.js'
import { attachFiles, dropCopies, resourceOps } from './resources.js'
import { checkClientEvents } from './rules.js'
import { queueWork, selfHostedOf, stopWork, workAfterSend } from './self-hosted.js'
import { pageOfThreads } from './threads.js'
import { resolveRubrics } from './outcomes.js'
import { sessionKey, viewOf, type SessionRecord, type SessionSkill } from './state.js'

export interface Actors {
  /** The live actor of a session, loading it (replaying its history) when needed; undefined if none exists. */
  get(id: string): Promise<SessionActor | undefined>
  /** The actor if it is in memory now (a read keeps it there); reads of idle sessions need no replay. */
  peek(id: string): SessionActor | undefined
  /** A session created here: its actor starts in memory. */
  add(actor: SessionActor): void
}

/** What a create reads: a client's body, or a deployment run's (whose initial events may hold system messages). */
type CreateRequest = OpInput<Omit<SessionCreateInput, 'initial_events'> & { initial_events?: DeploymentInitialEvent[] }, unknown>

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
  /** The session a create with this Idempotency-Key stored before, completed if it was stored in part. */
  const retriedCreate = async (id: string, req: CreateRequest) => {
    const cur = await store.get(sessionKey(id))
    if (!cur) return undefined
    if (cur.value.created_by !== fingerprint(req.body)) throw fail('idempotency_key_reused')
    const actor = await live(id)
    // Its host may have died between storing the record and storing every initial event (or its event): the rest.
    const sent = req.body.initial_events ?? []
    if (sent.length) await actor.accept(await resolveRubrics(deps.files, sent, (i) => `initial_events[${i}]`), req, undefined, sent)
    else await scheduled(actor.h.session)
    return actor.view()
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

  /** A session made ready for input (no initial events) is `session.status_scheduled`, once it is stored. */
  const scheduled = (s: Session) => deps.outbox.publish('session.status_scheduled', s.id, Date.parse(s.created_at))

  /**
   * Creates the session `req.id`: from a client (`create`), or from a deployment's run (`create.run`, with
   * `deploymentId`, its id and key from the run's). The same admission, record and initial events for both.
   */
  async function create(req: CreateRequest, deploymentId: string | null): Promise<Session> {
    const { id, body: b } = req
    checkFits(ctx.nc, b.initial_events ?? [])
    // A retried create (same Idempotency-Key, so the same id) finds what its first attempt stored.
    const again = req.key === undefined ? undefined : await retriedCreate(id, req)
    if (again) return again
    const agent = await snapshotAgent(deps.agents, b.agent).catch(inField('agent'))
    checkCreateInput(b, agent)
    // An outcome's File rubric becomes its text now: a missing File leaves no session (SPEC create rule 5).
    const initial = await resolveRubrics(deps.files, b.initial_events ?? [], (i) => `initial_events[${i}]`)
    await checkVaultRefs(ctx, b.vault_ids ?? [])
    const env = await deps.environments.acquire(b.environment_id).catch(inField('environment_id'))
    const release = () => deps.environments.release(env.id, id, req.rid)
    const t = now()
    let resources: SessionResource[]
    let skills: SessionSkill[] = []
    const wanted = requestedSkills(b.agent, agent)
    try {
      const traits = sandboxTraits(ctx)
      checkEnvironment(env, traits)
      if (wanted.length) checkSkillsRun(env, traits)
      // Copies made here and not listed by a record (this host killed before it) are swept (actors/file/copies.ts).
      resources = await attachFiles(deps, id, b.resources ?? [], t, req.rid)
      // Pinned last, just before the record: a version's delete holds a pin this young without asking (the record
      // may not be stored yet), so the pins must not wait on slow copies.
      if (wanted.length) {
        skills = await pinSessionSkills(ctx.client, id, wanted).catch(async (err) => {
          await dropCopies(deps, id, resources, req.rid)
          throw err
        })
        agent.skills = skillRefs(skills.filter((s) => s.member === undefined))
        // Its `self` copy runs its skills as the coordinator does; other members keep their own (pinned above too).
        for (const e of capturedAgents(agent)) if (e.id === agent.id) e.skills = agent.skills
      }
    } catch (err) {
      await release()
      throw err
    }
    const budget = b.budget ?? null
    const session: Session = {
      id,
      type: 'session',
      status: 'idle',
      agent,
      environment_id: env.id,
      title: b.title ?? null,
      metadata: b.metadata ?? {},
      budget,
      resources,
      vault_ids: b.vault_ids ?? [],
      outcome_evaluations: [],
      stats: { active_seconds: 0, duration_seconds: 0 },
      usage: toWireUsage(emptyUsage()),
      deployment_id: deploymentId,
      created_at: t,
      updated_at: t,
      archived_at: null,
    }
    const rec: SessionRecord = {
      session,
      env: env.config,
      totals: emptyUsage(),
      budget_created: budget !== null,
      budget_removed: false,
      running_since: null,
      ...(req.key === undefined ? {} : { created_by: fingerprint(b) }),
      ...(skills.length ? { skills } : {}),
    }
    // A write whose outcome is unknown may have stored the session: its pins stay (a version's delete asks).
    const record = await FencedRecord.create(store, sessionKey(id), rec).catch(async (err) => {
      await release()
      throw err
    })
    if (!record) {
      await release()
      // Another create of this id stored its record first: it pinned the same versions under the same id, so they stay.
      const raced = req.key === undefined ? undefined : await retriedCreate(id, req)
      if (raced) return raced
      throw fail('session_exists', id)
    }
    const actor = SessionActor.fresh(deps, rec, record)
    actors.add(actor)
    await queueWork(ctx, selfHostedOf(rec), req.rid)
    if (initial.length) {
      await actor.accept(initial, req, undefined, b.initial_events)
      // The turn starts at once; the reply says so even if the first status event is a moment away.
      return { ...actor.view(), status: 'running' }
    }
    await scheduled(session)
    return actor.view()
  }

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

    async update({ id, body: b }) {
      const actor = await live(id)
      const h = actor.h
      const s = h.session
      if (s.archived_at) throw fail('session_archived', id)
      const changes: Record<string, unknown> = {}
      if (b.title !== undefined && b.title !== s.title) changes.title = b.title
      if (b.metadata) {
        const m = patchMetadata(s.metadata, b.metadata)
        if (!sameJson(m, s.metadata)) changes.metadata = m
      }
      if (b.agent) {
        if (actor.isRunning() || h.pending.size > 0) throw fail('session_running', id)
        const tools = b.agent.tools !== undefined ? normalizeTools(b.agent.tools ?? []) : s.agent.tools
        const servers = b.agent.mcp_servers !== undefined ? normalizeServers(b.agent.mcp_servers ?? []) : s.agent.mcp_servers
        prefixed('agent.', () => checkToolGraph(tools, servers))
        // Its skills stay (a session update cannot change them), so the tools must still serve them.
        if (b.agent.tools !== undefined) prefixed('agent.', () => checkSkillRequirements(s.agent.skills, tools))
        prefixed('agent.', () => checkCoordinatorToolNames(s.agent.multiagent, tools))
        const agent = { ...s.agent, tools, mcp_servers: servers }
        if (!sameJson(agent, s.agent)) changes.agent = agent
      }
      if (b.budget !== undefined) {
        const next = b.budget === null ? null : budgetCents(b.budget)!
        const current = s.budget ? budgetCents(s.budget)! : null
        const consumed = h.liveTotals()
        const code = checkBudgetUpdate({
          createdWithBudget: h.rec.budget_created,
          budgetRemoved: h.rec.budget_removed,
          current,
          next,
          consumedCents: consumed,
          models: modelsOf(s.agent),
        })
        if (code === 'budget_not_raised') throw fail(code, listCostCents(consumed))
        if (code === 'model_not_budgetable') throw fail(code, modelNames(s.agent))
        if (code) throw fail(code)
        if (next !== current) changes.budget = b.budget
      }
      if (Object.keys(changes).length) {
        await actor.record('session.updated', changes)
        await actor.save()
        if ('budget' in changes) await actor.resumeIfPaused()
      }
      return actor.view()
    },

    async archive({ id, rid }) {
      const actor = await live(id)
      const s = actor.h.session
      if (s.archived_at) return actor.view()
      // Input waiting in the mailbox is a turn about to start: archiving now would strand it (as for agent updates).
      if (actor.isRunning() || actor.h.pending.size > 0) throw fail('session_running', id)
      await actor.record('session.status_terminated', {})
      await actor.save()
      await stopWork(ctx, selfHostedOf(actor.h.rec), true, rid)
      return actor.view()
    },

    async delete({ id, rid }) {
      const actor = await live(id)
      await actor.destroy(rid)
      await stopWork(ctx, selfHostedOf(actor.h.rec), true, rid)
      // The session is gone: so are the copies its resources held.
      await dropCopies(deps, id, actor.h.session.resources, rid)
      await unpinSessionSkills(ctx.client, id, actor.h.rec.skills ?? [], ctx.log)
      return { id, type: 'session_deleted' }
    },

    async 'events.send'(req) {
      await claimHolds(req.token)
      const { id } = req
      checkFits(ctx.nc, req.body.events)
      const actor = await live(id)
      const events = await resolveRubrics(deps.files, req.body.events, (i) => `events[${i}]`)
      const data = await actor.accept(events, req, (sent) => checkClientEvents(actor.h, sent), req.body.events)
      await workAfterSend(ctx, selfHostedOf(actor.h.rec), req.body.events, req.rid)
      return { data }
    },

    async 'events.list'({ id, query, token }) {
      await claimHolds(token)
      const lastSeq = await lastSeqOf(id)
      const a = actors.peek(id)
      // Half the server's largest message: the page's events, their msgpack framing and the reply envelope fit.
      const maxBytes = Math.floor((ctx.nc.info?.max_payload ?? 1024 * 1024) / 2)
      return listEvents({ js: ctx.js, sessionId: id, lastSeq, maxBytes, queued: a ? (e) => a.h.pending.has(e) : undefined }, query)
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
