import { monotonicFactory } from 'ulid'

// Monotonic: ids made in the same millisecond still sort in creation order.
const ulid = monotonicFactory()

export type IdPrefix =
  | 'agent' | 'env' | 'sesn' | 'sevt' | 'sthr' | 'req' | 'depl' | 'drun' | 'whep' | 'whe' | 'skill' | 'file'
  | 'outc' | 'vlt' | 'vcrd' | 'sesrsc' | 'host'

/** A prefixed, time-ordered id: `agent_01JX…`. */
export const newId = (prefix: IdPrefix): string => `${prefix}_${ulid()}`

/** Same shape as the ids we mint, so a malformed id is a 404 without a store round trip. */
export const looksLikeId = (prefix: IdPrefix, id: string): boolean =>
  id.startsWith(prefix + '_') && /^[A-Za-z0-9_]{1,128}$/.test(id)
