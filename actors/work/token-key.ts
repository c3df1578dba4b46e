import { randomBytes } from 'node:crypto'
import type { Kvm } from '@nats-io/kv'
import { Buckets } from '../../protocol/subjects.js'
import { isCasConflict, openBucket, type Storage } from '../kit/index.js'

const KEY = 'token-key'

/**
 * The key that signs sessions tokens (protocol/sessions-token.ts), the same on every host: made once, at random, by
 * the first host to start, and stored beside the queues; every other host reads it. It never leaves the cluster.
 */
export async function loadTokenKey(kvm: Kvm, storage: Storage): Promise<Uint8Array> {
  const kv = await openBucket(kvm, storage, Buckets.workQueues)
  for (;;) {
    const cur = await kv.get(KEY)
    if (cur && cur.operation === 'PUT' && cur.value.length === 32) return cur.value
    try {
      const key = randomBytes(32)
      await kv.create(KEY, key)
      return key
    } catch (err) {
      // Another host made it first: read theirs.
      if (!isCasConflict(err)) throw err
    }
  }
}
