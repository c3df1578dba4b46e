import { fingerprint } from '../../protocol/hash.js'
import { idFromKey, newId, type IdPrefix } from '../../protocol/ids.js'

/**
 * The id of a resource a create makes, and what it stores to recognise its retries: with an Idempotency-Key the id
 * comes from the key (`op` scopes it), so a retry names the same resource, and `createdBy` is the body's fingerprint,
 * which a retry's must match (else 422 `idempotency_key_reused`); without one, a fresh time-ordered id.
 */
export function createdId(prefix: IdPrefix, op: string, req: { key?: string; body: unknown }): { id: string; createdBy?: string } {
  if (req.key === undefined) return { id: newId(prefix) }
  return { id: idFromKey(prefix, op, req.key), createdBy: fingerprint(req.body) }
}
