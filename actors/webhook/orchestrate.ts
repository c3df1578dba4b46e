import type { JetStreamClient } from '@nats-io/jetstream'
import type { Kvm } from '@nats-io/kv'
import type { Logger } from 'pino'
import { WebhookKind } from '../../protocol/ops/webhook.js'
import { Buckets } from '../../protocol/subjects.js'
import type { ActorWire } from '../../protocol/wire.js'
import { actorClient, type Keyring, openBucket, type Storage, systemResolver } from '../kit/index.js'
import { DeliveryWorker, RECORD_MAX_AGE_MS, RECORDS_BUCKET } from './deliveries.js'
import { FanOut, openPositions } from './fanout.js'
import type { DevHost } from './post.js'

export interface DeliveriesOptions {
  js: JetStreamClient
  kvm: Kvm
  storage: Storage
  wire: ActorWire
  keyring: Keyring
  /** `TROUPE_WEBHOOK_DEV_HOSTS`: host names reached at a loopback address and port instead of DNS. Default none. */
  devHosts?: ReadonlyMap<string, DevHost>
  log: Logger
}

/**
 * The webhooks of this process (`orchestrate`, `start`): the fan-out of lifecycle events into deliveries (fanout.ts)
 * and the attempts. Stopping ends both; what they leave unacknowledged goes to another orchestrator.
 */
export async function startDeliveries(o: DeliveriesOptions): Promise<{ stop(): Promise<void> }> {
  const endpoints = await openBucket(o.kvm, o.storage, Buckets.webhooks)
  const client = actorClient({ wire: o.wire, local: () => undefined })
  const records = await openBucket(o.kvm, o.storage, RECORDS_BUCKET, { ttl: RECORD_MAX_AGE_MS })
  const worker = new DeliveryWorker({
    js: o.js,
    endpoints,
    records,
    keyring: o.keyring,
    disable: async (endpoint, reason) => void (await client.call(WebhookKind.ops.disable, { id: endpoint, body: { reason } })),
    post: { resolve: systemResolver, ...(o.devHosts?.size ? { devHosts: o.devHosts } : {}) },
    log: o.log.child({ component: 'webhook-deliveries' }),
  })
  await worker.start(o.storage)
  const positions = await openPositions(o.kvm, o.storage)
  const fanOut = new FanOut({ js: o.js, endpoints, positions, storage: o.storage, log: o.log.child({ component: 'webhook-fanout' }) })
  // The same sources read again a minute behind: deliveries the work queue lost are queued again.
  const audit = new FanOut({ js: o.js, endpoints, positions, storage: o.storage, audit: { records }, log: o.log.child({ component: 'webhook-audit' }) })
  try {
    await fanOut.start()
    await audit.start()
  } catch (err) {
    await Promise.all([fanOut.stop(), audit.stop(), worker.stop()])
    throw err
  }
  return {
    async stop() {
      await Promise.all([fanOut.stop(), audit.stop(), worker.stop()])
    },
  }
}
