import type { McpOAuthRefresh } from '../../protocol/schemas/vault.js'
import { describe, type Fetch, type HttpAnswer, send } from './http-answer.js'

/** New tokens from a token endpoint. */
export interface Tokens {
  access_token: string
  /** Present when the endpoint rotated the refresh token. */
  refresh_token?: string
  /** Absent when the endpoint did not say how long the token lives. */
  expires_in?: number
}

/**
 * A refresh's outcome: new tokens; `failed`, the endpoint answered something else (an error, no token: the refresh
 * token or the client is refused); `connect_error`, nothing answered in time. `answer` is what the endpoint said.
 */
export type RefreshOutcome =
  | { status: 'succeeded'; tokens: Tokens; answer: HttpAnswer }
  | { status: 'failed'; reason: string; answer: HttpAnswer }
  | { status: 'connect_error'; reason: string }

/**
 * The OAuth 2 refresh_token grant (RFC 6749 §6) at the credential's token endpoint: a form POST with `grant_type`,
 * `refresh_token`, `resource` and `scope` when set, and the client authenticated as `token_endpoint_auth` says (none:
 * `client_id` in the body; client_secret_basic: HTTP Basic of the form-encoded id and secret, RFC 6749 §2.3.1;
 * client_secret_post: both in the body). No secret reaches `reason`.
 */
export async function refreshGrant(
  r: McpOAuthRefresh,
  secrets: { refresh_token: string; client_secret?: string },
  timeoutMs: number,
  fetch: Fetch,
): Promise<RefreshOutcome> {
  const form = new URLSearchParams({ grant_type: 'refresh_token', refresh_token: secrets.refresh_token })
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' }
  const auth = r.token_endpoint_auth.type
  if (auth === 'client_secret_basic') {
    const enc = (s: string) => encodeURIComponent(s).replace(/%20/g, '+')
    headers.authorization = `Basic ${Buffer.from(`${enc(r.client_id)}:${enc(secrets.client_secret ?? '')}`).toString('base64')}`
  } else {
    form.set('client_id', r.client_id)
    if (auth === 'client_secret_post') form.set('client_secret', secrets.client_secret ?? '')
  }
  if (r.resource) form.set('resource', r.resource)
  if (r.scope) form.set('scope', r.scope)
  let answer: HttpAnswer
  try {
    answer = await send(fetch, r.token_endpoint, { method: 'POST', headers, body: form.toString() }, timeoutMs)
  } catch (err) {
    return { status: 'connect_error', reason: `the token endpoint ${r.token_endpoint} could not be reached: ${describe(err)}` }
  }
  const at = `the token endpoint ${r.token_endpoint} answered ${answer.status}`
  if (answer.status < 200 || answer.status > 299) {
    const code = errorCode(answer.text)
    return { status: 'failed', reason: code ? `${at} (${code})` : at, answer }
  }
  let doc: Record<string, unknown>
  try {
    doc = JSON.parse(answer.text) as Record<string, unknown>
  } catch {
    return { status: 'failed', reason: `${at} with no JSON`, answer }
  }
  if (typeof doc?.access_token !== 'string' || !doc.access_token) return { status: 'failed', reason: `${at} with no access_token`, answer }
  const tokens: Tokens = { access_token: doc.access_token }
  if (typeof doc.refresh_token === 'string' && doc.refresh_token) tokens.refresh_token = doc.refresh_token
  const expiresIn = Number(doc.expires_in)
  if (doc.expires_in != null && Number.isFinite(expiresIn) && expiresIn > 0) tokens.expires_in = expiresIn
  return { status: 'succeeded', tokens, answer }
}

/** The `error` code of an OAuth error answer (`invalid_grant`…), when it is one: a short token, never the body. */
function errorCode(text: string): string | undefined {
  try {
    const e = (JSON.parse(text) as { error?: unknown }).error
    return typeof e === 'string' && /^[\w.-]{1,64}$/.test(e) ? e : undefined
  } catch {
    return undefined
  }
}
