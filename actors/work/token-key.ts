import type { Kvm } from '@nats-io/kv'
import { Buckets } from '../../protocol/subjects.js'
import { loadClusterSecret, openBucket, type Storage } from '../kit/index.js'

const KEY = 'token-key'

/**
 * The key that signs sessions tokens (protocol/sessions-token.ts), the same on every host: made once, at random, by
 * the first host to start, and stored beside the queues; every other host reads it. It never leaves the cluster.
 */
export async function loadTokenKey(kvm: Kvm, storage: Storage): Promise<Uint8Array> {
  const kv = await openBucket(kvm, storage, Buckets.workQueues)
  return loadClusterSecret(kv, KEY, 'sessions token key', storage.log)
}
