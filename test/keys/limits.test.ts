import t from 'tap'
import { callerOf, presentedKey } from '../../gateway/auth.js'
import { RateLimits } from '../../gateway/rate-limit.js'
import type { KeyChecks } from '../../gateway/types.js'
import { ROUTES } from '../../protocol/routes/index.js'
import { type CallerKey, DEFAULT_KEY_LIMITS } from '../../protocol/schemas/api-key.js'
import { toEnvelope } from '../../protocol/errors/envelope.js'
import { isApiError } from '../../protocol/errors/api-error.js'

// The gateway's key check and rate limits as pure functions: which refusal each key gets where, and the limiter's
// error bound across hosts on a simulated clock (no timing luck: every instant is given).

const key = (over: Partial<CallerKey> = {}): CallerKey => ({
  id: 'apikey_1',
  scope: 'full',
  workspace_id: 'wrkspc_default',
  expiresAt: Number.POSITIVE_INFINITY,
  revoked: false,
  limits: { ...DEFAULT_KEY_LIMITS },
  caller: { api_key_id: 'apikey_1', workspace_id: 'wrkspc_default' },
  ...over,
})
const route = (id: string) => ROUTES.find((r) => r.operationId === id)!
const checks = (keys: Record<string, CallerKey>, on = true): KeyChecks => ({
  on,
  lookup: (p) => keys[p],
  hosts: () => 1,
  runningSessions: () => 0,
  sessionRunning: () => false,
})

t.test('presented keys: x-api-key first, then a Bearer token in any case', async (t) => {
  t.equal(presentedKey({ 'x-api-key': 'a', authorization: 'Bearer b' }), 'a')
  t.equal(presentedKey({ authorization: 'Bearer b' }), 'b')
  t.equal(presentedKey({ authorization: 'bearer  b ' }), 'b')
  t.equal(presentedKey({ authorization: 'Basic b' }), undefined)
  t.equal(presentedKey({ authorization: 'Bearer ' }), undefined)
  t.equal(presentedKey({}), undefined)
})

t.test('refusals: 401 unknown, revoked, expired or missing; 403 read-only writes and non-admin keys on admin routes', async (t) => {
  const keys = checks({
    full: key(),
    ro: key({ scope: 'read_only' }),
    admin: key({ scope: 'admin' }),
    gone: key({ revoked: true }),
    old: key({ expiresAt: 1000 }),
  })
  const now = 2000
  const code = (v: ReturnType<typeof callerOf>) => (isApiError(v) ? `${v.status} ${v.reason}` : v ? 'ok' : 'unchecked')
  const list = route('agents.list')
  const create = route('agents.create')
  const adminList = route('admin.apiKeys.list')
  t.equal(code(callerOf(keys, list, 'GET', { 'x-api-key': 'full' }, now)), 'ok')
  t.equal(code(callerOf(keys, list, 'GET', { 'x-api-key': 'nope' }, now)), '401 api_key_invalid')
  t.equal(code(callerOf(keys, list, 'GET', {}, now)), '401 api_key_missing')
  t.equal(code(callerOf(keys, list, 'GET', { 'x-api-key': 'gone' }, now)), '401 api_key_invalid')
  t.equal(code(callerOf(keys, list, 'GET', { 'x-api-key': 'old' }, now)), '401 api_key_invalid')
  t.equal(code(callerOf(keys, list, 'GET', { 'x-api-key': 'ro' }, now)), 'ok')
  t.equal(code(callerOf(keys, create, 'POST', { 'x-api-key': 'ro' }, now)), '403 api_key_read_only')
  t.equal(code(callerOf(keys, create, 'POST', { authorization: 'Bearer full' }, now)), 'ok')
  t.equal(code(callerOf(keys, adminList, 'GET', { 'x-api-key': 'full' }, now)), '403 api_key_not_admin')
  t.equal(code(callerOf(keys, adminList, 'GET', { 'x-api-key': 'admin' }, now)), 'ok')
  t.equal(code(callerOf(keys, adminList, 'GET', {}, now)), '401 admin_key_required')
  // Keys off: the API is open, the admin routes are not.
  const off = checks({ admin: key({ scope: 'admin' }) }, false)
  t.equal(code(callerOf(off, create, 'POST', {}, now)), 'unchecked')
  t.equal(code(callerOf(off, adminList, 'GET', {}, now)), '401 admin_key_required')
  t.equal(code(callerOf(off, adminList, 'GET', { 'x-api-key': 'admin' }, now)), 'ok')
  t.equal(code(callerOf(undefined, adminList, 'GET', { 'x-api-key': 'admin' }, now)), '401 api_key_invalid')
  const env = toEnvelope(callerOf(keys, create, 'POST', { 'x-api-key': 'ro' }, now), 'req_1')
  t.equal(env.body.error.type, 'permission_error')
  t.equal(env.body.error.details?.error_code, 'api_key_read_only')
})

t.test("a 429's envelope: rate_limit_error with retry-after in seconds and retry-after-ms", async (t) => {
  const limits = new RateLimits(() => 1)
  const k = key({ limits: { ...DEFAULT_KEY_LIMITS, requests_per_second: 2, burst: 2 } })
  t.equal(limits.request(k, 0), 0)
  t.equal(limits.request(k, 0), 0)
  const wait = limits.request(k, 0)
  t.equal(wait, 500, 'one token at 2/s is 500 ms away')
  const { rateLimited } = await import('../../gateway/rate-limit.js')
  const env = toEnvelope(rateLimited('requests per second', 2, wait), 'req_1')
  t.equal(env.status, 429)
  t.equal(env.body.error.type, 'rate_limit_error')
  t.equal(env.headers['retry-after'], '1')
  t.equal(env.headers['retry-after-ms'], '500')
  t.equal(limits.request(k, 500), 0, 'admitted once the wait is over')
})

t.test('three hosts sharing a key: never more than rate·t + burst, and the whole rate when spread evenly', async (t) => {
  const rate = 30
  const burst = 60
  const k = key({ limits: { ...DEFAULT_KEY_LIMITS, requests_per_second: rate, burst } })
  const hosts = [0, 1, 2].map(() => new RateLimits(() => 3))
  // A client sending as fast as it can, round robin over the three hosts, every millisecond for 10 s.
  let admitted = 0
  const seconds = 10
  for (let ms = 0; ms < seconds * 1000; ms++) for (const h of hosts) if (h.request(k, ms) === 0) admitted++
  const bound = rate * seconds + burst
  t.ok(admitted <= bound, `${admitted} admitted ≤ ${bound}`)
  t.ok(admitted >= rate * seconds, `${admitted} admitted ≥ ${rate * seconds} (the whole rate, spread evenly)`)
  // All of it through one host: that host's share only.
  const one = new RateLimits(() => 3)
  let alone = 0
  for (let ms = 0; ms < seconds * 1000; ms++) if (one.request(k, ms) === 0) alone++
  t.ok(alone <= (rate * seconds + burst) / 3 + 1, `one host admits its third (${alone})`)
})

t.test('upload bytes per minute: a share per host, a big upload waits for a whole share', async (t) => {
  const mib = 1024 * 1024
  const k = key({ limits: { ...DEFAULT_KEY_LIMITS, upload_bytes_per_minute: 60 * mib } })
  const l = new RateLimits(() => 1)
  t.equal(l.upload(k, 50 * mib, 0), 0)
  const wait = l.upload(k, 20 * mib, 0)
  t.equal(wait, 10_000, '10 MiB left of 60 MiB a minute: 10 MiB more is 10 s away')
  t.equal(l.upload(k, 20 * mib, wait), 0)
  t.equal(l.upload(key({ id: 'apikey_2', limits: { ...DEFAULT_KEY_LIMITS, upload_bytes_per_minute: 0 } }), 1e12, 0), 0, '0 is no limit')
})

t.test('concurrent running sessions: a message to an idle session is refused at the limit, one to a running session never', async (t) => {
  const { sessionsFull } = await import('../../gateway/rate-limit.js')
  const running = new Set(['sesn_a', 'sesn_b'])
  const keys: KeyChecks = { ...checks({}), runningSessions: () => running.size, sessionRunning: (id) => running.has(id) }
  const k = key({ limits: { ...DEFAULT_KEY_LIMITS, concurrent_sessions: 2 } })
  const refused = sessionsFull(keys, k, 'sesn_c')
  t.equal(refused?.status, 429)
  t.equal(refused?.reason, 'rate_limited')
  t.match(refused?.message, /2 concurrent running sessions/)
  t.equal(sessionsFull(keys, k, 'sesn_a'), undefined, 'a running session takes more events')
  t.equal(sessionsFull(keys, key({ limits: { ...DEFAULT_KEY_LIMITS, concurrent_sessions: 3 } }), 'sesn_c'), undefined, 'under the limit')
  t.equal(sessionsFull(keys, key({ limits: { ...DEFAULT_KEY_LIMITS, concurrent_sessions: 0 } }), 'sesn_c'), undefined, '0 is no limit')
})
