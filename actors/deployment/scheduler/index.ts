import type { Kvm } from '@nats-io/kv'
import type { Logger } from 'pino'
import type { Clock } from '../../../protocol/clock.js'
import { newId } from '../../../protocol/ids.js'
import { DeploymentKind } from '../../../protocol/ops/deployment.js'
import { Buckets } from '../../../protocol/subjects.js'
import type { ActorWire } from '../../../protocol/wire.js'
import { actorClient, openBucket, Roster, type Storage } from '../../kit/index.js'
import { CLAIM_MAX_AGE_MS, Claims } from './claims.js'
import { Scheduler } from './scheduler.js'
import { watchSchedules } from './schedules.js'

/** How long (real ms) a fire may take before it is tried again: below the lease, so a holder never fires past it. */
const FIRE_TIMEOUT_MS = 4000
/** A claim's lease (real ms): a holder that dies holds its occurrences up this long at most. */
export const LEASE_MS = 5000

export interface SchedulerSettings {
  kvm: Kvm
  storage: Storage
  /** Where fires go: the actor wire (over NATS in `orchestrate`; the host's, with local calls, in `start`). */
  wire: ActorWire
  clock: Clock
  log: Logger
  /** Occurrences claimed or fired at once. Default 64. */
  concurrency?: number
}

export interface RunningScheduler {
  id: string
  scheduler: Scheduler
  stop(): Promise<void>
}

/**
 * What a scheduler says at each beat, `orch.<id>` in `troupe_orchestrators`: when (epoch ms, real), and what its schedule
 * clock read then and how fast it runs, so a reader elsewhere (`troupe status`) tells the time schedules see.
 */
export interface OrchestratorBeat {
  at: number
  /** The schedule clock's reading at `at` (absent in beats of earlier versions). */
  clock?: number
  /** Schedule-clock ms per real ms. */
  rate?: number
}

/** How often a scheduler says it is alive (real ms). */
export const ORCHESTRATOR_BEAT_MS = 1000
/** A scheduler not heard for this long (real ms) is left out of the split; also the bucket's max age. */
export const ORCHESTRATOR_TTL_MS = 3000

/**
 * Starts the deployments' scheduler of this process (the `orchestrate` role; `start` runs one too): opens its buckets,
 * joins the roster of schedulers, and fires every deployment's schedule from a watch of `troupe_deployments`.
 */
export async function startScheduler(o: SchedulerSettings): Promise<RunningScheduler> {
  const id = newId('orch')
  const log = o.log.child({ scheduler: id })
  // One after the other: on a cluster that has just formed, creating streams at once can fail (supervisor/host.ts).
  const deployments = await openBucket(o.kvm, o.storage, Buckets.deployments)
  const claimsKv = await openBucket(o.kvm, o.storage, Buckets.scheduleClaims, { ttl: CLAIM_MAX_AGE_MS })
  const rosterKv = await openBucket(o.kvm, o.storage, Buckets.orchestrators, { ttl: ORCHESTRATOR_TTL_MS })
  const roster = new Roster(rosterKv, {
    prefix: 'orch.',
    beatMs: ORCHESTRATOR_BEAT_MS,
    ttlMs: ORCHESTRATOR_TTL_MS,
    self: { id, value: (): OrchestratorBeat => ({ at: Date.now(), clock: o.clock(), rate: o.clock.rate ?? 1 }) },
    log,
  })
  await roster.start()
  const claims = new Claims(claimsKv, id, o.clock, LEASE_MS * (o.clock.rate ?? 1))
  const client = actorClient({ wire: o.wire, local: () => undefined, timeoutMs: FIRE_TIMEOUT_MS })
  const scheduler = new Scheduler({
    self: id,
    clock: o.clock,
    log,
    claims,
    concurrency: o.concurrency,
    // Never undefined: this scheduler is a live member.
    preferred: (key) => roster.preferred(key) ?? id,
    fire: (deployment, scheduledAt) => client.call(DeploymentKind.ops.fire, { id: deployment, body: { scheduled_at: scheduledAt } }),
  })
  await claims.watchDone((deployment, at) => scheduler.done(deployment, at))
  const watch = await watchSchedules(deployments, (deployment, s) => scheduler.update(deployment, s))
  log.info('deployment scheduler started')
  return {
    id,
    scheduler,
    async stop() {
      watch.stop()
      scheduler.stop()
      claims.stop()
      await roster.stop()
    },
  }
}
