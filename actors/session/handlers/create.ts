import { inField, fail } from '../../../protocol/errors/fail.js'
import { fingerprint } from '../../../protocol/hash.js'
import type { DeploymentInitialEvent } from '../../../protocol/schemas/deployment.js'
import type { SessionResource } from '../../../protocol/schemas/resource.js'
import type { SessionCreateInput } from '../../../protocol/schemas/session.js'
import type { Session } from '../../../protocol/session.js'
import { now } from '../../../protocol/time.js'
import { FencedRecord, type OpInput } from '../../kit/index.js'
import {
  capturedAgents,
  checkCreateInput,
  checkEnvironment,
  checkMcpEgress,
  checkSkillsRun,
  checkVaultRefs,
  sandboxTraits,
  snapshotAgent,
} from '../admission/index.js'
import { SessionActor } from '../actor/index.js'
import { emptyUsage } from '../billing/index.js'
import { toWireUsage } from '../billing/index.js'
import { attachFiles, attachMemoryStores, checkMemoryMounted, detachMemoryStores, dropCopies } from '../admission/index.js'
import type { ActorDeps } from '../actor/index.js'
import { checkFits } from '../log/index.js'
import { resolveRubrics } from '../admission/index.js'
import { queueWork, selfHostedOf } from '../admission/index.js'
import { pinSessionSkills, requestedSkills, skillRefs } from '../admission/index.js'
import { sessionKey, type SessionRecord, type SessionSkill } from '../history/index.js'

/** What a create reads: a client's body, or a deployment run's (whose initial events may hold system messages). */
export type CreateRequest = OpInput<Omit<SessionCreateInput, 'initial_events'> & { initial_events?: DeploymentInitialEvent[] }, unknown>

export interface Actors {
  /** The live actor of a session, loading it (replaying its history) when needed; undefined if none exists. */
  get(id: string): Promise<SessionActor | undefined>
  /** The actor if it is in memory now (a read keeps it there); reads of idle sessions need no replay. */
  peek(id: string): SessionActor | undefined
  /** A session created here: its actor starts in memory. */
  add(actor: SessionActor): void
}

/**
 * Session creates: from a client (`create`), or from a deployment's run (`create.run`, with `deploymentId`, its id and
 * key from the run's). The same admission, record and initial events for both: the agent snapshotted, the input
 * checked, File rubrics read, vaults and the environment checked, resources copied and skills pinned (each taken back
 * if a later step fails), the record stored, then the initial events (or `session.status_scheduled`).
 */
export function sessionCreate(deps: ActorDeps, actors: Actors, live: (id: string) => Promise<SessionActor>) {
  const { ctx, store } = deps
  /** The session a create with this Idempotency-Key stored before, completed if it was stored in part. */
  const retriedCreate = async (id: string, req: CreateRequest) => {
    const cur = await store.get(sessionKey(id))
    if (!cur) return undefined
    if (cur.value.created_by !== fingerprint(req.body)) throw fail('idempotency_key_reused')
    const actor = await live(id)
    // Its host may have died between storing the record and storing every initial event (or its event): the rest.
    const sent = req.body.initial_events ?? []
    if (sent.length) await actor.accept(await resolveRubrics(deps.files, sent, (i) => `initial_events[${i}]`), req, undefined, sent)
    else await scheduled(actor.view())
    return actor.view()
  }

  /** A session made ready for input (no initial events) is `session.status_scheduled`, once it is stored. */
  const scheduled = (s: Session) => deps.outbox.publish('session.status_scheduled', s.id, Date.parse(s.created_at))

  /**
   * Creates the session `req.id`: from a client (`create`), or from a deployment's run (`create.run`, with
   * `deploymentId`, its id and key from the run's). The same admission, record and initial events for both.
   */
  return async function create(req: CreateRequest, deploymentId: string | null): Promise<Session> {
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
    let resources: SessionResource[] = []
    let skills: SessionSkill[] = []
    const wanted = requestedSkills(b.agent, agent)
    const params = b.resources ?? []
    // What a failure after the copies takes back: the copies, and the stores attached.
    const undo = async () => {
      await dropCopies(ctx, id, resources, req.rid)
      await detachMemoryStores(ctx, id, resources, req.rid)
    }
    try {
      const traits = sandboxTraits(ctx)
      checkMcpEgress(env, agent)
      checkEnvironment(env, traits)
      if (wanted.length) checkSkillsRun(env, traits)
      checkMemoryMounted(params, env, traits)
      // Copies made here and not listed by a record (this host killed before it) are swept (actors/file/copies.ts).
      const files = await attachFiles(ctx, id, params, t, req.rid)
      // Attached after the copies: a store attached stays refused to delete until its session is (see
      // docs/ARCHITECTURE.md "Memory mounts" for a host killed before the record).
      const stores = await attachMemoryStores(ctx, id, params, req.rid).catch(async (err) => {
        await dropCopies(ctx, id, [...files.values()], req.rid)
        throw err
      })
      resources = params.flatMap((_, i) => {
        const r = files.get(i) ?? stores.get(i)
        return r ? [r] : []
      })
      // Pinned last, just before the record: a version's delete holds a pin this young without asking (the record
      // may not be stored yet), so the pins must not wait on slow copies.
      if (wanted.length) {
        skills = await pinSessionSkills(ctx.client, id, wanted).catch(async (err) => {
          await undo()
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
      ...(req.caller === undefined ? {} : { api_key_id: req.caller.api_key_id }),
      ...(skills.length ? { skills } : {}),
    }
    // A write whose outcome is unknown may have stored the session: its pins stay (a version's delete asks), and its
    // stores stay attached.
    const record = await FencedRecord.create(store, sessionKey(id), rec).catch(async (err) => {
      await release()
      throw err
    })
    if (!record) {
      await release()
      // The record that won is another create of this id: its stores (the same, by the same session id) stay attached.
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
}
