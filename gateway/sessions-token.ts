import type { ApiError } from '../protocol/errors/api-error.js'
import { fail } from '../protocol/errors/fail.js'
import type { Route } from '../protocol/routes/index.js'
import { isSessionsToken, type SessionsTokenClaims, tokenReaches, verifySessionsToken } from '../protocol/sessions-token.js'

/**
 * The sessions token a request presents (`Authorization: Bearer trst1.…`), checked from its bytes: undefined when it
 * presents none (an API key, or nothing: default mode takes those), its claims when it is valid and reaches this route,
 * else the 401 (forged, truncated, expired) or 403 (out of its scope) to answer. Synchronous: nothing may be awaited
 * before the body is read.
 */
export function sessionsTokenOf(
  route: Route,
  params: Record<string, string>,
  headers: Record<string, string>,
  key: Uint8Array | undefined,
  ended: (c: SessionsTokenClaims) => boolean,
): SessionsTokenClaims | ApiError | undefined {
  const auth = headers.authorization ?? ''
  const bearer = auth.slice(0, 7).toLowerCase() === 'bearer ' ? auth.slice(7).trim() : (headers['x-api-key'] ?? '').trim()
  if (!isSessionsToken(bearer)) return undefined
  if (!key) return fail('sessions_token_invalid', 'cannot be checked by this gateway')
  const c = verifySessionsToken(key, bearer)
  if (c === 'forged') return fail('sessions_token_invalid', 'is not valid')
  if (c === 'expired') return fail('sessions_token_invalid', 'has expired')
  if (!tokenReaches(c, route.operationId, params)) return fail('sessions_token_scope', `${route.method} ${route.path}`)
  // The item's own routes check the claim where it is held: an ended one is a 412 there, which the worker expects.
  if (!route.path.includes('/work/') && ended(c)) return fail('sessions_token_invalid', 'ended with its claim on the work item')
  return c
}

/** The headers a route's op reads (`Route.headers`), each cut to 256 characters. */
export function routeHeaders(route: Route, headers: Record<string, string>): Record<string, string> | undefined {
  if (!route.headers) return undefined
  const out: Record<string, string> = {}
  for (const name of route.headers) {
    const v = headers[name]
    if (v !== undefined) out[name] = v.slice(0, 256)
  }
  return out
}
