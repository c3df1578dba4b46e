import { fail } from '../../protocol/errors/fail.js'
import { systemClock } from '../../protocol/clock.js'
import { DeploymentKind, DeploymentRunKind } from '../../protocol/ops/deployment.js'
import type { DeploymentRun } from '../../protocol/schemas/deployment.js'
import { Buckets } from '../../protocol/subjects.js'
import { type ActorKindDef, durableState, ensureOutbox, implement, openBucket, Outbox, Projection, RecordStore } from '../kit/index.js'
import { deploymentMarks } from './marks.js'
import { DeploymentAdmission } from './admission.js'
import { deploymentOps } from './behaviour.js'
import { runOps } from './run-kind.js'
import { RunRecorder } from './runs.js'
import { DEPLOYMENT_PREFIX, RUN_PREFIX, type DeploymentState, type StoredDeployment } from './state.js'

/**
 * Deployments. Each deployment is a durable-state actor (kit/durable-state.ts) on the host owning its partition: its
 * updates, pauses and runs one at a time, its reads from memory. A run is work of that actor: its intent is stored in
 * the deployment's state first, then the work step creates its session and records it (runs.ts), resumed by the
 * partition's next owner after a crash. Creates and lists run on any host (the create of its state is the fence; lists
 * come from a projection).
 */
export const deploymentKind: ActorKindDef = {
  contract: DeploymentKind,
  async start(ctx) {
    const clock = ctx.settings.scheduleClock ?? systemClock
    const runsKv = await openBucket(ctx.kvm, ctx.storage, Buckets.deploymentRuns)
    await ensureOutbox(ctx.storage)
    const runs = new RecordStore<DeploymentRun>(runsKv)
    const recorder = new RunRecorder(ctx.client, runs, new Outbox(ctx.js))
    const states = await durableState<DeploymentState, typeof DeploymentKind>(ctx, {
      contract: DeploymentKind,
      bucket: Buckets.deployments,
      missing: (id) => fail('deployment_not_found', id),
      work: {
        pending: (s) => s.runs.length > 0,
        step: (s) => recorder.step(s),
        // Never reached (maxRebuilds below): a run is not dropped, since it would leave a session without its run.
        abandon: (s) => s,
      },
      // A run's failures of its own are bugs: its actor keeps retrying with back-off (capped at 5 s), logging each.
      maxRebuilds: Number.POSITIVE_INFINITY,
      marks: deploymentMarks,
    })
    const firesFrom = new Map<string, string | null>()
    const projection = new Projection<StoredDeployment, DeploymentState>(states.kv, DEPLOYMENT_PREFIX, (s) => {
      firesFrom.set(s.deployment.id, s.fires_from)
      return s.deployment
    })
    await projection.start(ctx.log)
    const ops = deploymentOps({
      states,
      projection,
      firesFrom: (id) => firesFrom.get(id) ?? null,
      admission: new DeploymentAdmission(ctx.client, ctx.settings, ctx.keyringConflict),
      recorder,
      runs,
      clock,
    })
    return states.runtime(implement(DeploymentKind, ops), () => projection.stop())
  },
}

/** Deployment runs: records written once by their deployment's owner, read on any host (lists from a projection). */
export const deploymentRunKind: ActorKindDef = {
  contract: DeploymentRunKind,
  async start(ctx) {
    const kv = await openBucket(ctx.kvm, ctx.storage, Buckets.deploymentRuns)
    const projection = new Projection<DeploymentRun>(kv, RUN_PREFIX)
    await projection.start(ctx.log)
    return { ops: implement(DeploymentRunKind, runOps(new RecordStore<DeploymentRun>(kv), projection)), close: async () => projection.stop() }
  },
}

// The orchestrating roles' scheduler of deployments.
export { type RunningScheduler, startScheduler } from './scheduler/index.js'

// What `troupe status` reads of deployments where they are stored, and how it tells when each fires next as the
// scheduler does.
export { DEPLOYMENT_PREFIX, RUN_PREFIX, deploymentView, type DeploymentState } from './state.js'
export { type OrchestratorBeat, ORCHESTRATOR_TTL_MS } from './scheduler/index.js'
export { type ClaimValue, parseClaimKey } from './scheduler/claims.js'
export { fireAfter, nextToFire } from './scheduler/occurrences.js'
export { type FiringFields, type Scheduled, scheduledOf } from './scheduler/schedules.js'
