import { ApiError } from '../protocol/errors/api-error.js'
import { fail } from '../protocol/errors/fail.js'
import type { Route } from '../protocol/routes/index.js'
import type { CallerKey } from '../protocol/schemas/api-key.js'
import type { KeyChecks } from './types.js'

/** The API key a request presents: `x-api-key`, else `authorization: Bearer …`; undefined when neither carries one. */
export function presentedKey(headers: Record<string, string>): string | undefined {
  const key = headers['x-api-key']
  if (key) return key
  const auth = headers.authorization
  // `Bearer ` in any case, the scheme of RFC 6750 (the official client sends its authToken so).
  if (auth && auth.length > 7 && auth.charCodeAt(6) === 32 && auth.slice(0, 6).toLowerCase() === 'bearer') return auth.slice(7).trim() || undefined
  return undefined
}

/**
 * Who calls, when keys are checked: the caller's key, or the refusal to answer (401 no key, an unknown, revoked or
 * expired one; 403 a read-only key on a method that changes something, a key below `admin` on an admin route);
 * undefined when keys are not checked on this route. Admin routes always want an admin key, even with keys off.
 * Synchronous and allocation-free for a known key: it runs before the body is read, on every request.
 */
export function callerOf(
  keys: KeyChecks | undefined,
  route: Route,
  method: string,
  headers: Record<string, string>,
  nowMs: number,
): CallerKey | ApiError | undefined {
  if (!route.admin && !keys?.on) return undefined
  const presented = presentedKey(headers)
  if (presented === undefined) return route.admin ? fail('admin_key_required') : fail('api_key_missing')
  const key = keys?.lookup(presented)
  if (!key) return fail('api_key_invalid', 'is not valid')
  if (key.revoked) return fail('api_key_invalid', 'has been revoked')
  if (key.expiresAt <= nowMs) return fail('api_key_invalid', 'has expired')
  if (route.admin) return key.scope === 'admin' ? key : fail('api_key_not_admin', key.scope)
  // HEAD is answered as GET (the gateway maps it before this): both only read.
  if (key.scope === 'read_only' && method !== 'GET') return fail('api_key_read_only', method, route.path)
  return key
}

export const isRefusal = (v: CallerKey | ApiError | undefined): v is ApiError => v instanceof ApiError
