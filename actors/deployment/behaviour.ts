import { setTimeout as sleep } from 'node:timers/promises'
import type { Clock } from '../../protocol/clock.js'
import { fail } from '../../protocol/errors/fail.js'
import { idFromKey, newId } from '../../protocol/ids.js'
import type { DeploymentKind, FireReply } from '../../protocol/ops/deployment.js'
import { isOccurrence } from '../../protocol/schedule.js'
import { patchMetadata, sameJson } from '../../protocol/schemas/common.js'
import type { Deployment, DeploymentCreateInput, DeploymentRun, DeploymentUpdateInput, ScheduleParamsT } from '../../protocol/schemas/deployment.js'
import { now } from '../../protocol/time.js'
import { textOrNull } from '../agent/index.js'
import { createdId, type DurableState, type Handlers, pageOf, type Projection, type RecordStore } from '../kit/index.js'
import { checkCreateInput } from '../session/index.js'
import type { SessionAgent } from '../../protocol/session.js'
import type { DeploymentAdmission } from './admission.js'
import type { RunRecorder } from './runs.js'
import { deploymentView, runKey, runView, viewOf, type DeploymentState, type PendingRun, type StoredDeployment } from './state.js'

/** How long a manual run's request waits for its run to be recorded before it looks in the store (ms). */
const RUN_WAIT_MS = 20_000

export interface DeploymentDeps {
  states: DurableState<DeploymentState, typeof DeploymentKind>
  projection: Projection<StoredDeployment, DeploymentState>
  /** `fires_from` of each deployment, for lists (the projection keeps the deployment only). */
  firesFrom: (id: string) => string | null
  admission: DeploymentAdmission
  recorder: RunRecorder
  runs: RecordStore<DeploymentRun>
  clock: Clock
}

const iso = (ms: number) => new Date(ms).toISOString()
const sameSchedule = (a: ScheduleParamsT | null, b: { expression: string; timezone: string } | null) =>
  a === null || b === null ? a === b : a.expression === b.expression && a.timezone === b.timezone

/** What a run copies of its deployment, as it is when the run is decided. */
function pendingRun(d: StoredDeployment, id: string, trigger: PendingRun['trigger_context'], at: number): PendingRun {
  return {
    id,
    trigger_context: trigger,
    created_at: iso(at),
    agent: d.agent,
    session: {
      deployment_id: d.id,
      agent: d.agent,
      environment_id: d.environment_id,
      initial_events: d.initial_events,
      resources: d.resources,
      vault_ids: d.vault_ids,
      budget: d.budget,
    },
  }
}

export function deploymentOps(deps: DeploymentDeps): Handlers<typeof DeploymentKind> {
  const { states, projection, admission, recorder, runs, clock } = deps

  /** The deployment a create with this Idempotency-Key stored before. */
  async function retriedCreate(id: string, createdBy: string): Promise<Deployment | undefined> {
    const s = await states.read(id)
    if (!s) return undefined
    if (s.created_by !== createdBy) throw fail('idempotency_key_reused')
    return viewOf(s, clock())
  }

  /** The create rules that need no stored state, on the fields as they will be. */
  const checkFields = (d: Pick<DeploymentCreateInput, 'resources' | 'vault_ids' | 'initial_events' | 'budget'>, agent: SessionAgent) =>
    checkCreateInput(d, agent, 'deployments')

  const ops = states.ops({
    get: { shared: (s) => viewOf(s, clock()) },

    async update(s, { id, body: b }) {
      const d = s.deployment
      if (d.archived_at) throw fail('deployment_archived', id)
      const next = await updated(d, b)
      const schedule = b.schedule === undefined ? d.schedule : b.schedule && { ...b.schedule, last_run_at: d.schedule?.last_run_at ?? null }
      const candidate: StoredDeployment = { ...next, schedule }
      if (sameJson(candidate, d)) return { reply: viewOf(s, clock()) }
      const rescheduled = b.schedule !== undefined && !sameSchedule(b.schedule, d.schedule)
      const state: DeploymentState = {
        ...s,
        deployment: { ...candidate, updated_at: now() },
        // A new schedule fires from now on: nothing it would have fired before counts.
        fires_from: rescheduled ? (schedule ? iso(clock()) : null) : s.fires_from,
      }
      return { state, reply: viewOf(state, clock()) }
    },

    pause(s, { id }) {
      const d = s.deployment
      if (d.archived_at) throw fail('deployment_archived', id)
      if (d.paused_reason) return { reply: viewOf(s, clock()) }
      const state = { ...s, deployment: { ...d, status: 'paused' as const, paused_reason: { type: 'manual' as const }, updated_at: now() } }
      return { state, reply: viewOf(state, clock()) }
    },

    unpause(s, { id }) {
      const d = s.deployment
      if (d.archived_at) throw fail('deployment_archived', id)
      if (!d.paused_reason) return { reply: viewOf(s, clock()) }
      // No backfill: the schedule resumes at its next occurrence from now.
      const state: DeploymentState = {
        ...s,
        deployment: { ...d, status: 'active', paused_reason: null, updated_at: now() },
        fires_from: d.schedule ? iso(clock()) : null,
      }
      return { state, reply: viewOf(state, clock()) }
    },

    archive(s) {
      const d = s.deployment
      if (d.archived_at) return { reply: viewOf(s, clock()) }
      const t = now()
      const state = { ...s, deployment: { ...d, archived_at: t, updated_at: t } }
      return { state, reply: viewOf(state, clock()) }
    },

    fire(s, { id, body }): { state?: DeploymentState; reply: FireReply } {
      const d = s.deployment
      const t = Date.parse(body.scheduled_at)
      const at = iso(t)
      const runId = idFromKey('drun', 'schedule', `${id}@${at}`)
      if (s.runs.some((r) => r.id === runId) || at === s.last_scheduled_at) return { reply: { outcome: 'duplicate', run_id: runId } }
      if (s.last_scheduled_at !== null && t < Date.parse(s.last_scheduled_at))
        return { reply: { outcome: 'duplicate', why: 'before the last occurrence fired' } }
      const skip = (why: string) => ({ reply: { outcome: 'skipped' as const, why } })
      if (d.archived_at) return skip('archived')
      if (d.paused_reason) return skip('paused')
      if (!d.schedule) return skip('no schedule')
      if (!isOccurrence(d.schedule, t)) return skip('not an occurrence of the schedule')
      if (s.fires_from !== null && t < Date.parse(s.fires_from)) return skip('before the schedule was set or unpaused')
      const run = pendingRun(d, runId, { type: 'schedule', scheduled_at: at }, clock())
      return { state: { ...s, last_scheduled_at: at, runs: [...s.runs, run] }, reply: { outcome: 'queued', run_id: runId } }
    },
  })

  /** The deployment with the body's fields applied (but the schedule), each changed one checked as at create. */
  async function updated(d: StoredDeployment, b: DeploymentUpdateInput): Promise<StoredDeployment> {
    const pinned = b.agent === undefined ? undefined : await admission.pin(b.agent)
    if (b.environment_id !== undefined && b.environment_id !== d.environment_id)
      await admission.environment(b.environment_id, pinned?.agent ?? (await admission.pinned(d.agent)))
    else if (pinned) await admission.mcpEgress(d.environment_id, pinned.agent)
    const next: StoredDeployment = {
      ...d,
      name: b.name ?? d.name,
      description: b.description === undefined ? d.description : textOrNull(b.description),
      agent: pinned?.ref ?? d.agent,
      environment_id: b.environment_id ?? d.environment_id,
      initial_events: b.initial_events ?? d.initial_events,
      resources: b.resources === undefined ? d.resources : (b.resources ?? []),
      vault_ids: b.vault_ids === undefined ? d.vault_ids : (b.vault_ids ?? []),
      metadata: b.metadata === undefined || b.metadata === null ? d.metadata : patchMetadata(d.metadata, b.metadata),
      budget: b.budget === undefined ? d.budget : b.budget,
    }
    const budgetChecked = next.budget !== null && (pinned !== undefined || b.budget !== undefined)
    const agent = pinned?.agent ?? (budgetChecked ? await admission.pinned(d.agent) : undefined)
    checkFields(
      {
        resources: b.resources ?? [],
        vault_ids: b.vault_ids ?? [],
        initial_events: b.initial_events ?? [],
        budget: budgetChecked ? next.budget : null,
      },
      agent as SessionAgent,
    )
    if (b.resources) await admission.resources(b.resources)
    if (b.vault_ids) await admission.vaults(b.vault_ids)
    return next
  }

  return {
    // Placed on any host: the id is new, and the create of its state is the fence against a second one.
    async create(req) {
      const b = req.body
      // With an Idempotency-Key the id comes from the key: a retry finds the deployment its first attempt stored.
      const { id, createdBy } = createdId('depl', 'deployments.create', req)
      const again = createdBy && (await retriedCreate(id, createdBy))
      if (again) return again
      const { ref, agent } = await admission.pin(b.agent)
      await admission.environment(b.environment_id, agent)
      checkFields(b, agent)
      await admission.resources(b.resources ?? [])
      await admission.vaults(b.vault_ids ?? [])
      const t = now()
      const at = clock()
      const deployment: StoredDeployment = {
        id,
        type: 'deployment',
        name: b.name,
        description: textOrNull(b.description),
        agent: ref,
        environment_id: b.environment_id,
        initial_events: b.initial_events,
        resources: b.resources ?? [],
        vault_ids: b.vault_ids ?? [],
        metadata: b.metadata ?? {},
        schedule: b.schedule ? { ...b.schedule, last_run_at: null } : null,
        status: 'active',
        paused_reason: null,
        budget: b.budget ?? null,
        created_at: t,
        updated_at: t,
        archived_at: null,
      }
      const state: DeploymentState = {
        deployment,
        ...(createdBy ? { created_by: createdBy } : {}),
        fires_from: b.schedule ? iso(at) : null,
        last_scheduled_at: null,
        runs: [],
      }
      if (!(await states.create(id, state))) {
        const raced = createdBy && (await retriedCreate(id, createdBy))
        if (raced) return raced
        // A fresh id met a stored one (a ULID collision), or a keyed create found its state gone (deployments are never
        // deleted): neither happens, and neither is the client's to fix.
        throw fail('internal', `deployment id ${id} is taken`)
      }
      return viewOf(state, at)
    },

    async list({ query: q }) {
      await projection.fresh()
      const gte = q['created_at[gte]']?.toISOString()
      const lte = q['created_at[lte]']?.toISOString()
      const includeArchived = q.include_archived ?? false
      const filters = { agent_id: q.agent_id, status: q.status, include_archived: includeArchived, 'created_at[gte]': gte, 'created_at[lte]': lte }
      const at = clock()
      return pageOf(
        projection,
        'deployments',
        filters,
        q.page,
        q.limit ?? 20,
        (d) =>
          (includeArchived || d.archived_at === null) &&
          (q.agent_id === undefined || d.agent.id === q.agent_id) &&
          (q.status === undefined || d.status === q.status) &&
          (gte === undefined || d.created_at >= gte) &&
          (lte === undefined || d.created_at <= lte),
        (d) => deploymentView(d, deps.firesFrom(d.id), at),
      )
    },

    ...ops,

    /** A manual run: its intent stored (an exclusive step of the actor), then its record once the work step has made it. */
    async run(input) {
      const key = input.key
      // A retry of a run already recorded answers with it.
      if (key !== undefined) {
        const done = await runs.get(runKey(manualRunId(input.id, key)))
        if (done) return runView(done.value)
      }
      const runId = await states.exclusive(input.id, (s) => {
        const d = s.deployment
        if (d.archived_at) throw fail('deployment_archived', input.id)
        const id = key === undefined ? newId('drun') : manualRunId(input.id, key)
        recorder.expect(id, RUN_WAIT_MS + 5000)
        // A retry while the first attempt's run is still pending waits for the same run.
        if (s.runs.some((r) => r.id === id)) return { reply: id }
        return { state: { ...s, runs: [...s.runs, pendingRun(d, id, { type: 'manual' }, clock())] }, reply: id }
      })
      const rec = await Promise.race([recorder.recorded(runId), sleep(RUN_WAIT_MS, undefined, { ref: false })])
      if (rec) return rec
      // Recorded elsewhere (the partition moved on): the store has it, or the run is still on its way.
      const stored = await runs.get(runKey(runId))
      if (stored) return runView(stored.value)
      throw fail('owner_timeout')
    },
  }
}

/** The id of a manual run asked for with an Idempotency-Key: a retry names the same run. */
const manualRunId = (deploymentId: string, key: string) => idFromKey('drun', 'deployments.run', `${deploymentId}\n${key}`)
