import { randomBytes } from 'node:crypto'
import type { KV } from '@nats-io/kv'
import { isCasConflict } from './nats-errors.js'
import { retryWhileStarting, type StartupLog } from './retry.js'

/**
 * A 32-byte secret the same on every host of a cluster, kept at `key` in `kv`: made once, at random, by whoever first
 * needs it (a compare-and-set create); everyone else reads theirs. `what` names it in start-up's waiting lines.
 */
export async function loadClusterSecret(kv: KV, key: string, what: string, log?: StartupLog): Promise<Uint8Array> {
  for (;;) {
    const cur = await retryWhileStarting(what, () => kv.get(key), { log })
    if (cur && cur.operation === 'PUT' && cur.value.length === 32) return cur.value
    try {
      const made = randomBytes(32)
      // A create whose answer was lost but which was stored is a conflict on the next attempt: read then.
      await retryWhileStarting(what, () => kv.create(key, made), { log })
      return made
    } catch (err) {
      // Another host (or the CLI) made it first: read theirs.
      if (!isCasConflict((err as Error).cause) && !isCasConflict(err)) throw err
    }
  }
}
