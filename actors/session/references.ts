import type { KV } from '@nats-io/kv'
import type { Logger } from 'pino'
import type { ActorRequest } from '../../protocol/envelope.js'
import type { Environment } from '../../protocol/schemas/environment.js'
import { environmentOps } from '../environment/behaviour.js'
import type { Handler } from '../kit/types.js'

const request = (id: string): ActorRequest => ({ op: '', rid: '', params: { environment_id: id }, query: {}, body: {} })

/**
 * The environment reference each session holds (an environment in use cannot be deleted), taken and dropped by
 * running the environment kind's own acquire and release on this host. Environments are a shared kind (any
 * host serves any id, every write a compare-and-set on the record), so this is the same operation on the same
 * record as asking over NATS, one actor request fewer per session create; concurrent creates on one
 * environment share one write (RecordStore.mutate batches them).
 */
export class EnvironmentRefs {
  private readonly ops: Record<string, Handler>

  constructor(kv: KV, private readonly log: Logger) {
    // acquire and release never list, so no projection.
    this.ops = environmentOps(kv, undefined as never)
  }

  /** The environment, with one more reference; 404 when missing, 400 when archived. */
  acquire(id: string): Promise<Environment> {
    return this.ops.acquire!(request(id)) as Promise<Environment>
  }

  /** Drops a reference. Never throws: one that could not be dropped is logged (with the request that asked). */
  async release(id: string, session: string, rid?: string): Promise<void> {
    await this.ops.release!(request(id)).catch((err) => this.log.warn({ err, env: id, session, rid }, 'environment reference not released'))
  }
}
