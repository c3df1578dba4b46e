import { isApiError, type ApiError } from '../../protocol/errors/api-error.js'
import { fail } from '../../protocol/errors/fail.js'
import { idFromKey } from '../../protocol/ids.js'
import { SessionKind } from '../../protocol/ops/session.js'
import { NON_PAUSING_RUN_ERRORS, type DeploymentRun, type RunErrorType } from '../../protocol/schemas/deployment.js'
import { now } from '../../protocol/time.js'
import { type ActorClient, isTransientNatsError, type Outbox, type RecordStore } from '../kit/index.js'
import { runKey, runView, type DeploymentState, type PendingRun } from './state.js'

/**
 * How long a run keeps trying a session create that fails for a moment before it records the failure: real time since
 * its first failure on this host (a test's fast schedule clock must not turn a failover into a failed run).
 */
export const RUN_RETRY_MS = 60_000

/** The session a run creates: its id and Idempotency-Key come from the run's, so a retry after a crash finds it. */
export const sessionIdOf = (runId: string) => idFromKey('sesn', 'deployment_run', runId)

/** What a refusal of the session create makes of the run (WIRE §14's error types). */
function runError(err: ApiError): RunErrorType {
  switch (err.reason) {
    case 'agent_archived':
      return 'agent_archived_error'
    case 'environment_archived':
      return 'environment_archived_error'
    case 'environment_not_found':
      return 'environment_not_found_error'
    case 'file_not_found':
      return 'file_not_found_error'
    case 'vault_not_found':
      return 'vault_not_found_error'
    case 'vault_archived':
      return 'vault_archived_error'
    case 'memory_store_archived':
      return 'memory_store_archived_error'
    case 'memory_store_not_found':
      return 'session_resource_not_found_error'
    case 'mcp_egress_blocked':
      return 'mcp_egress_blocked_error'
  }
  return err.status < 500 ? 'session_creation_rejected_error' : 'unknown_error'
}

/** A failure that says nothing of the outcome yet: the store or the session's owner was away for a moment. */
const isTransient = (err: unknown) => (isApiError(err) ? err.status === 503 || err.status === 504 : isTransientNatsError(err))

/**
 * The run's commit protocol, one pending run at a time (the deployment's `work` step): create its session
 * (idempotent by the run's id), record the run (`run.<id>`, created once), publish a scheduled run's lifecycle event to
 * the outbox (deduplicated by its id), then drop the intent from the deployment's state. A crash between any two
 * steps is resumed by the partition's next owner from the intent, and every step it repeats finds what the first
 * attempt did: the session exists exactly when the run records it.
 */
export class RunRecorder {
  /** Manual runs whose requests wait for their record, by run id (the `run` op answers with it). */
  private readonly waiters = new Map<string, { done: Promise<DeploymentRun>; resolve: (run: DeploymentRun) => void }>()
  /** When each run's session create first failed for a moment here (epoch ms), while it keeps failing. */
  private readonly failingSince = new Map<string, number>()

  constructor(
    private readonly client: ActorClient,
    private readonly runs: RecordStore<DeploymentRun>,
    private readonly outbox: Outbox,
  ) {}

  /**
   * Called by the op that stores the run's intent, before the step can record it: `recorded(runId)` then resolves
   * with the record once this host stores it (or finds it stored). Forgotten after `forMs`, so an intent whose write
   * failed leaves nothing behind.
   */
  expect(runId: string, forMs: number): void {
    if (this.waiters.has(runId)) return
    let resolve!: (run: DeploymentRun) => void
    const done = new Promise<DeploymentRun>((r) => {
      resolve = r
    })
    this.waiters.set(runId, { done, resolve })
    setTimeout(() => this.waiters.delete(runId), forMs).unref()
  }

  /** The record of a run `expect`ed here; undefined when none is expected. */
  recorded(runId: string): Promise<DeploymentRun> | undefined {
    return this.waiters.get(runId)?.done
  }

  /** The work step: the oldest pending run, committed; the state without it. */
  async step(state: DeploymentState): Promise<DeploymentState> {
    const run = state.runs[0]!
    const outcome = await this.session(run)
    this.failingSince.delete(run.id)
    const made: DeploymentRun = {
      id: run.id,
      type: 'deployment_run',
      deployment_id: state.deployment.id,
      agent: run.agent,
      session_id: outcome.session_id,
      error: outcome.error,
      trigger_type: run.trigger_context.type,
      trigger_context: run.trigger_context,
      created_at: run.created_at,
    }
    // Created once: an attempt before a crash may have stored it already, and what it stored stands.
    const record = runView((await this.runs.create(runKey(run.id), made)) === false ? ((await this.runs.get(runKey(run.id)))?.value ?? made) : made)
    if (run.trigger_context.type === 'schedule') await this.publish(record)
    this.waiters.get(run.id)?.resolve(record)
    this.waiters.delete(run.id)
    return settled(state, record)
  }

  /** The run's session, or the error that refused it; throws while the outcome cannot be known yet. */
  private async session(run: PendingRun): Promise<Pick<DeploymentRun, 'session_id' | 'error'>> {
    const id = sessionIdOf(run.id)
    try {
      const s = await this.client.call(SessionKind.ops['create.run'], { id, key: run.id, body: run.session })
      return { session_id: s.id, error: null }
    } catch (err) {
      if (!isTransient(err)) {
        // Anything else that is not the session kind's answer is ours: the kit rebuilds the actor and tries again.
        if (!isApiError(err)) throw err
        return { session_id: null, error: { type: runError(err), message: err.message } }
      }
      const since = this.failingSince.get(run.id) ?? Date.now()
      this.failingSince.set(run.id, since)
      if (Date.now() - since < RUN_RETRY_MS) throw fail('store_unavailable')
      // Given up: but a create whose answer was lost may have made the session, which the run must then name.
      const exists = await this.client.call(SessionKind.ops.get, { id }).then(
        () => true,
        (e: unknown) => {
          if (isApiError(e) && e.status === 404) return false
          throw fail('store_unavailable')
        },
      )
      if (exists) return { session_id: id, error: null }
      return {
        session_id: null,
        error: {
          type: 'session_rate_limited_error',
          message: `The session could not be created for ${RUN_RETRY_MS / 1000} s (the server was busy or failing over)`,
        },
      }
    }
  }

  /** The run's lifecycle event (kit/outbox.ts), made at the run's time: a repeat after a crash is the same bytes. */
  private async publish(run: DeploymentRun): Promise<void> {
    const type = run.error ? 'deployment_run.failed' : 'deployment_run.succeeded'
    await this.outbox.publish(type, run.id, Date.parse(run.created_at))
  }
}

/** The deployment once `run` is recorded: the intent gone; a scheduled run is its last, and a fatal error pauses it. */
export function settled(state: DeploymentState, run: DeploymentRun): DeploymentState {
  const d = state.deployment
  const runs = state.runs.filter((r) => r.id !== run.id)
  if (run.trigger_context.type !== 'schedule') return { ...state, runs }
  let deployment = d.schedule ? { ...d, schedule: { ...d.schedule, last_run_at: run.created_at } } : d
  if (run.error && !NON_PAUSING_RUN_ERRORS.includes(run.error.type) && !d.archived_at && !d.paused_reason) {
    deployment = { ...deployment, status: 'paused', paused_reason: { type: 'error', error: { type: run.error.type } }, updated_at: now() }
  }
  return { ...state, deployment, runs }
}
