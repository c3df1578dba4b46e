import { TimeoutError } from '@nats-io/nats-core'
import type { KV } from '@nats-io/kv'

/** How long a listing of keys may take before it is given up (ms). */
export const LIST_KEYS_TIMEOUT_MS = 10_000

/**
 * The keys of `kv` matching `filter`, or a `TimeoutError` after `timeoutMs` (default `LIST_KEYS_TIMEOUT_MS`).
 * nats.js's `keys()` reads an ordered consumer until it has delivered everything, and learns that from a message
 * with nothing pending or from an idle heartbeat: when the stream's leader moves while it reads, neither may come, and
 * the iteration waits for ever (a placement pass once waited on one for two minutes, holding partitions nobody served).
 */
export async function listKeys(kv: KV, filter: string, timeoutMs = LIST_KEYS_TIMEOUT_MS): Promise<string[]> {
  let timedOut = false
  let stop: (() => void) | undefined
  const timer = setTimeout(() => {
    timedOut = true
    stop?.()
  }, timeoutMs)
  try {
    const iter = await kv.keys(filter)
    if (timedOut) {
      iter.stop()
      throw new TimeoutError()
    }
    stop = () => iter.stop()
    const keys: string[] = []
    for await (const k of iter) keys.push(k)
    if (timedOut) throw new TimeoutError()
    return keys
  } finally {
    clearTimeout(timer)
  }
}
