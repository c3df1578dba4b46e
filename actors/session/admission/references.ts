import type { Logger } from 'pino'
import { EnvironmentKind } from '../../../protocol/ops/environment.js'
import type { Environment } from '../../../protocol/schemas/environment.js'
import type { ActorClient } from '../../kit/index.js'

/**
 * The environment reference each session holds (an environment in use cannot be deleted), taken and dropped with
 * the environment kind's acquire and release. Those ops run on any host, so they are served on this one, one
 * actor request fewer per session create; concurrent creates on one environment share one write
 * (RecordStore.mutate batches them).
 */
export class EnvironmentRefs {
  constructor(
    private readonly client: ActorClient,
    private readonly log: Logger,
  ) {}

  /** The environment, with one more reference; 404 when missing, 400 when archived. */
  acquire(id: string): Promise<Environment> {
    return this.client.call(EnvironmentKind.ops.acquire, { id })
  }

  /** Drops a reference. Never throws: one that could not be dropped is logged (with the request that asked). */
  async release(id: string, session: string, rid?: string): Promise<void> {
    await this.client
      .call(EnvironmentKind.ops.release, { id, rid })
      .catch((err: unknown) => this.log.warn({ err, env: id, session, rid }, 'environment reference not released'))
  }
}
