import { type SessionsTokenClaims, tokenReaches } from '../../protocol/sessions-token.js'
import { exampleBody, exampleQuery } from './examples.js'
import type { Rng } from './rng.js'
import { ALL_TARGETS, fillPath, victimPicker, type Target } from './targets.js'
import type { HttpSpec, Victims } from './types.js'

/**
 * The `hostile-header` class (issue 29): the work queue's routes and the session routes a sessions token reaches, sent
 * with hostile credentials and worker ids: forged, truncated, tampered, oversized and non-ASCII sessions tokens, a valid
 * token of another item, in `Authorization` or `x-api-key`; odd `Anthropic-Worker-ID`s; hostile `block_ms`, TTL,
 * `expected_last_heartbeat` and reclaim values beside them. Never a 5xx; an invalid token cleanly presented is always
 * a 401, a valid one off its scope a 403 (`HttpSpec.expect`).
 */

/** The work routes, the session routes a token reaches, and two it never reaches. */
const REACHABLE = new Set(['sessions.retrieve', 'sessions.events.list', 'sessions.events.send', 'sessions.events.stream'])
// From every route, whatever `--routes` picks: these are the routes a sessions token concerns.
export const HEADER_TARGETS: readonly Target[] = ALL_TARGETS.filter(
  (t) =>
    t.operationId.startsWith('environments.work.') || REACHABLE.has(t.operationId) || t.operationId === 'agents.list' || t.operationId === 'sessions.archive',
)

const b64 = (s: string) => Buffer.from(s).toString('base64url')
const PREFIX = 'trst1.'

function claimsOf(token: string): SessionsTokenClaims {
  return JSON.parse(Buffer.from(token.slice(PREFIX.length).split('.')[0]!, 'base64url').toString('utf8'))
}

/** A token that is not valid, from a valid one: every shape a forger or a broken worker could send. */
function badToken(rng: Rng, valid: string, other: string): { value: string; label: string } {
  const [body, sig] = valid.slice(PREFIX.length).split('.') as [string, string]
  const c = claimsOf(valid)
  const resigned = (claims: object) => `${PREFIX}${b64(JSON.stringify(claims))}.${sig}`
  const moves: Array<[string, () => string]> = [
    ['truncated', () => valid.slice(0, rng.between(PREFIX.length, valid.length - 1))],
    ['last char changed', () => valid.slice(0, -1) + (valid.endsWith('A') ? 'B' : 'A')],
    ['forged signature', () => `${PREFIX}${body}.${b64(String(rng.next())).padEnd(43, 'A').slice(0, 43)}`],
    ['no signature', () => `${PREFIX}${body}.`],
    ['no body', () => `${PREFIX}.${sig}`],
    ['prefix only', () => PREFIX],
    ['three parts', () => `${valid}.${sig}`],
    ['expired-looking claims', () => resigned({ ...c, x: 1 })],
    ['far-future claims', () => resigned({ ...c, x: 1e12 })],
    ['next claim', () => resigned({ ...c, n: c.n + 1 })],
    ['other item in claims', () => resigned({ ...c, w: claimsOf(other).w, s: claimsOf(other).s })],
    ['null claims', () => resigned(null as unknown as object)],
    ['claims of wrong types', () => resigned({ e: 1, w: [], s: {}, n: '1', x: 'soon' })],
    ['other token body, this signature', () => `${PREFIX}${other.slice(PREFIX.length).split('.')[0]}.${sig}`],
    ['huge', () => `${PREFIX}${'A'.repeat(rng.pick([1020, 1025, 5000, 7000]))}.${sig}`],
    ['non-ASCII body', () => `${PREFIX}${rng.pick(['ü', 'ключ', '😀', '\u00ff'])}${body}.${sig}`],
    ['non-ASCII signature', () => `${PREFIX}${body}.${sig.slice(0, -2)}é`],
    ['percent escapes', () => `${PREFIX}%00%2e.${sig}`],
    ['spaces inside', () => `${PREFIX}${body} .${sig}`],
  ]
  const [label, make] = rng.pick(moves)
  return { value: make(), label }
}

const WORKER_IDS = ['', ' ', 'x'.repeat(300), 'x'.repeat(10_000), 'ü-worker', '😀', '*', '>', 'a.b.c', '$JS.API.INFO', '%00', '../x', 'w\tw', 'fine-worker']

/** Query values the work routes take, each broken in its own way (and a few fine ones). */
const QUERY: Record<string, string[]> = {
  block_ms: ['0', '1', '999', '1000', '-1', '1.5', '1e3', 'x', '', '99999999999999999999', 'NaN', '0x10'],
  reclaim_older_than_ms: ['0', '-1', '1e300', 'x', '', '99999999999999999999', '5000'],
  desired_ttl_seconds: ['-1', '0', '1', '1e9', '99999999999999999999', 'NaN', '1.5', '', 'x', '30'],
  expected_last_heartbeat: ['', 'NO_HEARTBEAT', 'NO_HEARTBEAT ', 'no_heartbeat', 'x'.repeat(65), '2026-01-01T00:00:00.000Z', '%00', '../../x', '*', '>'],
}

/** Builds occurrence `occurrence` of the class: targets rotate, the rest comes from `rng`. */
export function buildHostileHeader(rng: Rng, occurrence: number, v: Victims): HttpSpec {
  const t = HEADER_TARGETS[occurrence % HEADER_TARGETS.length]!
  // Every parameter of the path from one self-hosted victim (its environment, item, session), or the usual victims.
  const i = rng.int(v.work.length)
  const own: Record<string, string> = { environment_id: v.work_environments[i]!, work_id: v.work[i]!, session_id: v.work_sessions[i]! }
  const pick = victimPicker(rng, v)
  const params: Record<string, string> = {}
  const target = fillPath(t, (p) => (params[p] = own[p] ?? pick(p)))
  const headers: Array<[string, string]> = []
  const notes: string[] = []
  let expect: number[] | undefined

  const move = rng.weighted([
    ['token', 6],
    ['worker', 2],
    ['query', 3],
  ] as const)
  if (move === 'token' || rng.chance(0.3)) {
    const j = rng.int(v.work_tokens.length)
    const valid = v.work_tokens[j]!
    const other = v.work_tokens[(j + 1) % v.work_tokens.length]!
    const kind = rng.weighted([
      ['bad', 6],
      ['valid', 3],
      ['odd scheme', 1],
    ] as const)
    let token: string
    let label: string
    if (kind === 'bad') {
      ;({ value: token, label } = badToken(rng, valid, other))
      expect = [401]
    } else {
      token = valid
      label = j === i ? 'its own item’s token' : 'another item’s token'
      // Off its scope the token is refused whatever else the request does; on it, any answer but a 5xx.
      if (!tokenReaches(claimsOf(valid), t.operationId, params)) expect = [403]
    }
    const where = rng.weighted([
      ['authorization', 5],
      ['x-api-key', 3],
      ['both', 1],
    ] as const)
    if (kind === 'odd scheme') {
      const scheme = rng.pick(['Basic ', 'Bearer', 'Bearer  ', 'Token ', ''])
      headers.push(['authorization', `${scheme}${token}`])
      label = `${label} under ${JSON.stringify(scheme)}`
      expect = undefined
    } else if (where === 'authorization') headers.push(['authorization', `${rng.pick(['Bearer ', 'bearer ', 'BEARER '])}${token}`])
    else if (where === 'x-api-key') headers.push(['x-api-key', token])
    else {
      // An API key beside the token: the token in Authorization is the credential that counts.
      headers.push(['authorization', `Bearer ${token}`], ['x-api-key', rng.pick(['sk-ant-fake', valid, other])])
    }
    notes.push(`token ${label} in ${where}`)
  }
  if (move === 'worker' || rng.chance(0.3)) {
    const w = rng.pick(WORKER_IDS)
    headers.push(['anthropic-worker-id', w])
    if (rng.chance(0.2)) headers.push(['anthropic-worker-id', 'second-id'])
    notes.push(`worker id ${JSON.stringify(w).slice(0, 30)}`)
  }
  let query = exampleQuery(t.operationId, v)
  if (move === 'query') {
    const keys = Object.keys(QUERY)
    const key = query.length && rng.chance(0.7) ? rng.pick(query)[0] : rng.pick(keys)
    const value = rng.pick(QUERY[key] ?? QUERY.block_ms!)
    query = [...query.filter(([k]) => k !== key), [key, value]]
    notes.push(`${key}=${JSON.stringify(value).slice(0, 30)}`)
  }
  const qs = query.map(([k, val]) => `${k}=${encodeURIComponent(val)}`).join('&')
  const body = t.hasBody ? JSON.stringify(exampleBody(t.operationId, v, rng) ?? {}) : undefined
  if (body !== undefined) headers.push(['content-type', 'application/json'])
  return {
    kind: 'http',
    class: 'hostile-header',
    route: `${t.method} ${t.path}`,
    method: t.method,
    target: qs ? `${target}?${qs}` : target,
    headers,
    ...(body === undefined ? {} : { body: Buffer.from(body, 'utf8') }),
    ...(expect ? { expect } : {}),
    note: notes.join(', '),
  }
}
