import { IDEMPOTENCY_KEY_HEADER, IdempotencyKey } from '../protocol/schemas/headers.js'
import type { Route } from '../protocol/routes/index.js'
import { parse } from '../protocol/validate.js'

/**
 * The client's Idempotency-Key, on routes that store something new; other routes are safe to repeat and ignore
 * it. A malformed key is a 400 before anything is stored.
 */
export function idempotencyKeyOf(route: Route, headers: Readonly<Record<string, string>>): string | undefined {
  const v = headers[IDEMPOTENCY_KEY_HEADER]
  if (!route.once || v === undefined) return undefined
  return parse(IdempotencyKey, v, 'Idempotency-Key header')
}
