import { randomBytes } from 'node:crypto'
import type { Kvm } from '@nats-io/kv'
import { Buckets } from '../../protocol/subjects.js'
import { isCasConflict, openBucket, retryWhileStarting, type Storage } from '../kit/index.js'

const KEY = 'token-key'

/**
 * The key that signs sessions tokens (protocol/sessions-token.ts), the same on every host: made once, at random, by
 * the first host to start, and stored beside the queues; every other host reads it. It never leaves the cluster.
 */
export async function loadTokenKey(kvm: Kvm, storage: Storage): Promise<Uint8Array> {
  const kv = await openBucket(kvm, storage, Buckets.workQueues)
  const { log } = storage
  for (;;) {
    const cur = await retryWhileStarting('sessions token key', () => kv.get(KEY), { log })
    if (cur && cur.operation === 'PUT' && cur.value.length === 32) return cur.value
    try {
      const key = randomBytes(32)
      // A create whose answer was lost but which was stored is a conflict on the next attempt: read then.
      await retryWhileStarting('sessions token key', () => kv.create(KEY, key), { log })
      return key
    } catch (err) {
      // Another host made it first: read theirs.
      if (!isCasConflict((err as Error).cause)) throw err
    }
  }
}
