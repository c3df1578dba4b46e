import { JetStreamApiError } from '@nats-io/jetstream'
import type { ObjectStore, ObjectStoreOptions, Objm } from '@nats-io/obj'
import { ensureReplicas, replicasRefused, type Storage } from './replicas.js'
import { retryWhileStarting } from './retry.js'

/**
 * Opens one of the project's object stores, creating it when missing with the configured replicas (an existing one
 * is brought to them), retrying while JetStream elects its leader: kit/buckets.ts for bytes.
 */
export async function openObjectStore(objm: Objm, storage: Storage, name: string, opts: Partial<ObjectStoreOptions> = {}): Promise<ObjectStore> {
  const os = await retryWhileStarting(`${name} object store`, () => objm.create(name, { ...opts, replicas: storage.replicas })).catch((err) => {
    if (err.cause instanceof JetStreamApiError && storage.replicas > 1) throw replicasRefused(`${name} object store`, storage.replicas, err.cause)
    throw err
  })
  const status = await os.status()
  await ensureReplicas(storage, status.streamInfo.config.name, status.streamInfo.config)
  return os
}
