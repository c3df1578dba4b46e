import { type } from 'arktype'
import type { Page } from '../page.js'
import { type Deployment, DeploymentCreate, DeploymentListQuery, type DeploymentRun, DeploymentRunListQuery, DeploymentUpdate } from '../schemas/deployment.js'
import { defineKind, returns } from './define.js'
import { lazy } from '../schemas/lazy.js'

/** Internal (the scheduler; no route): one occurrence of a deployment's schedule, at its RFC 3339 time. */
export const DeploymentFire = lazy(() => type({ '+': 'reject', scheduled_at: 'string.date.iso' }))

/**
 * What a fire did: `queued`, the run's intent is stored and its owner will record it (the run id is the occurrence's);
 * `duplicate`, that occurrence made its run already (a claim recovered after its holder died); `skipped`, the deployment
 * does not fire it now (archived, paused, no such occurrence in its schedule, or older than its last or its unpause),
 * `why` says which.
 */
export interface FireReply {
  outcome: 'queued' | 'duplicate' | 'skipped'
  run_id?: string
  why?: string
}

/**
 * Deployments. Creates and lists go to any host (a create's head is its fence; lists come from each host's projection);
 * everything about one deployment goes to the host owning its partition, where it is a durable-state actor: its
 * updates, pauses and runs one at a time, its reads from memory.
 */
export const DeploymentKind = defineKind(
  'deployment',
  { param: 'deployment_id', prefix: 'depl', noun: 'Deployment' },
  {
    create: { placement: 'any', body: DeploymentCreate, reply: returns<Deployment>() },
    list: { placement: 'any', query: DeploymentListQuery, reply: returns<Page<Deployment>>() },
    get: { placement: 'owner', reply: returns<Deployment>() },
    update: { placement: 'owner', body: DeploymentUpdate, reply: returns<Deployment>() },
    pause: { placement: 'owner', reply: returns<Deployment>() },
    unpause: { placement: 'owner', reply: returns<Deployment>() },
    archive: { placement: 'owner', reply: returns<Deployment>() },
    /** A manual run: answers once the run is recorded, with its session or its error. */
    run: { placement: 'owner', reply: returns<DeploymentRun>() },
    fire: { placement: 'owner', body: DeploymentFire, reply: returns<FireReply>() },
  },
)

/** Deployment runs: immutable records, read on any host (get from the store, lists from each host's projection). */
export const DeploymentRunKind = defineKind(
  'deployment_run',
  { param: 'deployment_run_id', prefix: 'drun', noun: 'Deployment run' },
  {
    get: { placement: 'any', reply: returns<DeploymentRun>() },
    list: { placement: 'any', query: DeploymentRunListQuery, reply: returns<Page<DeploymentRun>>() },
  },
)
