import type { NatsConnection } from '@nats-io/transport-node'
import type { KV } from '@nats-io/kv'
import { decode, encode } from '../../protocol/codec.js'
import type { ActorReply, ActorRequest } from '../../protocol/envelope.js'
import type { FireReply } from '../../protocol/ops/deployment.js'
import { parsePartitionedSubject } from '../../protocol/subjects.js'
import { DEPLOYMENT_PREFIX, type DeploymentState } from '../../actors/deployment/state.js'

/**
 * Stands in for the deployment kind's `fire` (its rules for a duplicate and a queued occurrence, on the record in
 * troupe_deployments), answering on the real actor subjects: the scheduler's tests see the wire, claims and
 * watches as they are, before the kind itself joins them in the end-to-end tests.
 */
export function fireOwner(nc: NatsConnection, kv: KV) {
  const queued = new Map<string, number[]>()
  let calls = 0
  const chains = new Map<string, Promise<void>>()
  const fire = async (id: string, at: number): Promise<FireReply> => {
    const e = await kv.get(`${DEPLOYMENT_PREFIX}${id}`)
    if (e?.operation !== 'PUT') return { outcome: 'skipped', why: 'gone' }
    const s = decode<DeploymentState>(e.value)
    if (s.last_scheduled_at !== null && at <= Date.parse(s.last_scheduled_at)) return { outcome: 'duplicate' }
    s.last_scheduled_at = new Date(at).toISOString()
    await kv.update(e.key, encode(s), e.revision)
    queued.set(id, [...(queued.get(id) ?? []), at])
    return { outcome: 'queued' }
  }
  const sub = nc.subscribe('troupe.deployment.*.*.fire', {
    callback: (_err, m) => {
      calls++
      const req = decode<ActorRequest>(m.data)
      const id = parsePartitionedSubject(m.subject)!.id
      const at = Date.parse((req.body as { scheduled_at: string }).scheduled_at)
      // One at a time per deployment, as its owner runs exclusive ops.
      const next = (chains.get(id) ?? Promise.resolve()).then(async () => {
        let reply: ActorReply
        try {
          reply = { ok: true, body: await fire(id, at) }
        } catch (err) {
          reply = { ok: false, error: { status: 503, type: 'overloaded_error', message: String(err) } }
        }
        m.respond(encode(reply))
      })
      chains.set(id, next)
    },
  })
  return {
    /** The occurrences each deployment queued, in order. */
    queued,
    get calls() {
      return calls
    },
    stop: () => sub.unsubscribe(),
  }
}

/** A deployment's state as the kind stores it, with only what the scheduler reads filled in meaningfully. */
export function deploymentState(id: string, o: { expression?: string; paused?: boolean; archived?: boolean; firesFrom?: number | null }): DeploymentState {
  const now = new Date().toISOString()
  return {
    deployment: {
      id,
      type: 'deployment',
      name: id,
      description: null,
      agent: { type: 'agent', id: 'agent_x', version: 1 },
      environment_id: 'env_x',
      initial_events: [],
      resources: [],
      vault_ids: [],
      metadata: {},
      schedule: o.expression === undefined ? null : { type: 'cron', expression: o.expression, timezone: 'UTC', last_run_at: null },
      status: o.paused ? 'paused' : 'active',
      paused_reason: o.paused ? { type: 'manual' } : null,
      budget: null,
      created_at: now,
      updated_at: now,
      archived_at: o.archived ? now : null,
    },
    fires_from: o.firesFrom === undefined || o.firesFrom === null ? null : new Date(o.firesFrom).toISOString(),
    last_scheduled_at: null,
    runs: [],
  } as unknown as DeploymentState
}
