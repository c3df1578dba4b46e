import type { KV, Kvm, KvOptions } from '@nats-io/kv'
import { JetStreamApiError } from '@nats-io/jetstream'
import { ensureReplicas, replicasRefused, type Storage, untilLed } from './replicas.js'
import { retryWhileStarting } from './retry.js'

/**
 * Opens one of the project's KV buckets, creating it when missing with the configured replicas (an existing
 * one is brought to them), retrying while JetStream elects its leader, or the bucket's stream its own. One value per
 * key (history 1) unless `opts` says otherwise.
 */
export async function openBucket(kvm: Kvm, storage: Storage, name: string, opts: Partial<KvOptions> = {}): Promise<KV> {
  const kv = await retryWhileStarting(`${name} bucket`, () => kvm.create(name, { history: 1, ...opts, replicas: storage.replicas }), {
    log: storage.log,
  }).catch((err) => {
    if (err.cause instanceof JetStreamApiError && storage.replicas > 1) throw replicasRefused(`${name} bucket`, storage.replicas, err.cause)
    throw err
  })
  // Created (or found) is not yet answering: the bucket's stream elects its leader after it is created, and a first
  // write before that times out.
  const info = await untilLed(storage, `${name} bucket`, `KV_${name}`)
  await ensureReplicas(storage, info.config.name, info.config)
  return kv
}
