import { fail } from '../../protocol/errors/fail.js'
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

export interface KeyedCreate<S extends { created_by?: string }, R> {
  /** What is stored under an id now, if anything. */
  stored(id: string): Promise<S | undefined>
  /** The answer a retry gets from what its first attempt stored. */
  answer(stored: S): R | Promise<R>
  /** Stores a new resource under `id`; false when the id exists already. */
  make(id: string, createdBy: string | undefined): Promise<R | false>
  /** The error when `make` found the id taken and no retry of this request stored it (default 422 `idempotency_key_reused`). */
  taken?: (id: string) => Error
}

/**
 * A create made at most once per Idempotency-Key (`createdId`): a retry is answered with what its first attempt stored
 * (checked against the request's fingerprint), before and after it tries to store anything (two attempts may race).
 */
export async function keyedCreate<S extends { created_by?: string }, R>(
  prefix: IdPrefix,
  op: string,
  req: { key?: string; body: unknown },
  c: KeyedCreate<S, R>,
): Promise<R> {
  const { id, createdBy } = createdId(prefix, op, req)
  const retried = async (): Promise<R | undefined> => {
    if (!createdBy) return undefined
    const s = await c.stored(id)
    if (!s) return undefined
    if (s.created_by !== createdBy) throw fail('idempotency_key_reused')
    return c.answer(s)
  }
  const again = await retried()
  if (again !== undefined) return again
  const made = await c.make(id, createdBy)
  if (made !== false) return made
  const raced = await retried()
  if (raced !== undefined) return raced
  throw c.taken?.(id) ?? fail('idempotency_key_reused')
}
