import { createHmac, timingSafeEqual } from 'node:crypto'

/**
 * A work item's `sessions_token` (issue 29): what it names, signed with the deployment's token key (HMAC-SHA256), so
 * any host checks it from the bytes alone, with no read per request. `n` is the claim it belongs to (the item's hand-out
 * count): heartbeat and stop compare it with the item's, so a token of an earlier claim is the 412 of a lost lease
 * there; the session's routes take it until it expires (`x`), or until the item's claim ends as this host heard
 * (gateway/sessions-token.ts).
 */
export interface SessionsTokenClaims {
  /** The environment. */
  e: string
  /** The work item. */
  w: string
  /** The session. */
  s: string
  /** The claim: which hand-out of the item this token was issued with. */
  n: number
  /** Expiry, epoch seconds. */
  x: number
}

/** What a token looks like: `trst1.<claims, base64url JSON>.<HMAC-SHA256 of them, base64url>`. */
const PREFIX = 'trst1.'

/** A token lives this long at most (s): a worker holds its item for hours at most. */
export const SESSIONS_TOKEN_TTL_S = 24 * 3600

/** The longest token accepted; anything longer is not one of ours. */
const MAX_LENGTH = 1024

export function signSessionsToken(key: Uint8Array, claims: SessionsTokenClaims): string {
  const body = Buffer.from(JSON.stringify(claims)).toString('base64url')
  return `${PREFIX}${body}.${mac(key, body)}`
}

/** Whether `bearer` is shaped like a sessions token (anything else is an API key, which default mode ignores). */
export const isSessionsToken = (bearer: string): boolean => bearer.startsWith(PREFIX)

/** The token's claims, or why it is refused (forged, truncated or expired). */
export function verifySessionsToken(key: Uint8Array, token: string, nowS = Date.now() / 1000): SessionsTokenClaims | 'forged' | 'expired' {
  if (token.length > MAX_LENGTH || !token.startsWith(PREFIX)) return 'forged'
  const [body, sig, extra] = token.slice(PREFIX.length).split('.')
  if (!body || !sig || extra !== undefined) return 'forged'
  const want = Buffer.from(mac(key, body))
  const got = Buffer.from(sig)
  if (want.length !== got.length || !timingSafeEqual(want, got)) return 'forged'
  let c: unknown
  try {
    c = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'))
  } catch {
    return 'forged'
  }
  if (!isClaims(c)) return 'forged'
  return c.x <= nowS ? 'expired' : c
}

/** A poll's `secret`: base64url JSON `{sessions_token}` (the client's BetaWorkSecret). */
export const workSecret = (token: string): string => Buffer.from(JSON.stringify({ sessions_token: token })).toString('base64url')

const mac = (key: Uint8Array, body: string) => createHmac('sha256', key).update(body).digest('base64url')

function isClaims(c: unknown): c is SessionsTokenClaims {
  if (!c || typeof c !== 'object') return false
  const o = c as Record<string, unknown>
  return typeof o.e === 'string' && typeof o.w === 'string' && typeof o.s === 'string' && Number.isSafeInteger(o.n) && typeof o.x === 'number'
}

/**
 * What a token reaches (issue 29 §5): its item's heartbeat and stop, its session's get, events list, stream and send.
 * `operationId` and `params` are the route's; true when the token may call it.
 */
export function tokenReaches(c: SessionsTokenClaims, operationId: string, params: Record<string, string>): boolean {
  switch (operationId) {
    case 'environments.work.heartbeat':
    case 'environments.work.stop':
      return params.environment_id === c.e && params.work_id === c.w
    case 'sessions.retrieve':
    case 'sessions.events.list':
    case 'sessions.events.send':
    case 'sessions.events.stream':
      return params.session_id === c.s
    default:
      return false
  }
}
