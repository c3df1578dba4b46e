import { randomBytes } from 'node:crypto'
import type { KV } from '@nats-io/kv'
import { isCasConflict, retryWhileStarting, type StartupLog } from '../kit/index.js'
import { SECRET_KEY } from './records.js'

/**
 * The cluster's HMAC key of API keys, the same on every host and in the CLI: made once, at random, by whoever first
 * needs it, and stored beside the keys' records; everyone else reads it. Without it a stolen bucket's hashes cannot be
 * tried against guesses offline; whoever reads NATS reads it too (NATS access is the cluster's own trust).
 */
export async function loadKeySecret(kv: KV, log?: StartupLog): Promise<Uint8Array> {
  for (;;) {
    const cur = await retryWhileStarting('API keys secret', () => kv.get(SECRET_KEY), { log })
    if (cur && cur.operation === 'PUT' && cur.value.length === 32) return cur.value
    try {
      const key = randomBytes(32)
      await retryWhileStarting('API keys secret', () => kv.create(SECRET_KEY, key), { log })
      return key
    } catch (err) {
      // Another host (or the CLI) made it first: read theirs.
      if (!isCasConflict((err as Error).cause) && !isCasConflict(err)) throw err
    }
  }
}
