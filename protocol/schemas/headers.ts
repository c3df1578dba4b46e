import { type } from 'arktype'
import { lazy } from './lazy.js'

/** The request header that makes a POST safe to retry (lower-case, as both HTTP adapters hand headers over). */
export const IDEMPOTENCY_KEY_HEADER = 'idempotency-key'

/**
 * `Idempotency-Key`: 1 to 255 visible ASCII characters (Stripe's bound). No spaces, so it can travel in a NATS
 * header beside other fields; a UUID, a ULID or any printable token fits.
 */
export const IdempotencyKey = lazy(() =>
  type('string').narrow(
    (s, ctx) =>
      /^[\x21-\x7e]{1,255}$/.test(s) ||
      ctx.reject({ expected: '1 to 255 visible ASCII characters (no spaces)', actual: JSON.stringify(s.length > 40 ? `${s.slice(0, 40)}…` : s) }),
  ),
)
