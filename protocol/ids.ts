import { getRandomValues } from 'node:crypto'
import { monotonicFactory } from 'ulid'

// ulid's default generator asks the system for one random byte per character (16 calls per id); a pool
// refilled 4 KiB at a time gives the same randomness for a fraction of the cost (ids are minted per event).
const pool = new Uint32Array(1024)
let next = pool.length
const random = () => {
  if (next === pool.length) {
    getRandomValues(pool)
    next = 0
  }
  return pool[next++]! / 2 ** 32
}

// Monotonic: ids made in the same millisecond still sort in creation order.
const ulid = monotonicFactory(random)

export type IdPrefix =
  | 'agent' | 'env' | 'sesn' | 'sevt' | 'sthr' | 'req' | 'depl' | 'drun' | 'whep' | 'whe' | 'skill' | 'file'
  | 'outc' | 'vlt' | 'vcrd' | 'sesrsc' | 'host'

/** A prefixed, time-ordered id: `agent_01JX…`. */
export const newId = (prefix: IdPrefix): string => `${prefix}_${ulid()}`

/** Same shape as the ids we mint, so a malformed id is a 404 without a store round trip. */
export const looksLikeId = (prefix: IdPrefix, id: string): boolean =>
  id.startsWith(prefix + '_') && /^[A-Za-z0-9_]{1,128}$/.test(id)
