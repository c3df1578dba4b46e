import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { judge } from './checks.js'
import { startNats } from '../helpers/nats.js'
import { raw, startTroupe } from '../helpers/troupe.js'
import { until } from '../helpers/wait.js'
import { Rng } from './rng.js'
import { ALL_TARGETS, fillPath, prefixOf, type Target } from './targets.js'
import type { HttpSpec, HttpTransport } from './types.js'
import { exchange, frame } from './wire.js'

/**
 * API keys under fire (issue 45): every route of the table sent with forged, truncated, altered, revoked, expired,
 * rotated-away, oversized and non-ASCII keys (401), read-only keys writing and non-admin keys on the admin routes
 * (403), and live keys, which must never be refused as such; never a 5xx, every refusal the JSON envelope. On a server
 * of its own with keys on (TROUPE_ADMIN_KEY_FILE), so the main run keeps every route open.
 */
export interface KeyFuzzResult {
  ok: boolean
  failures: string[]
  counts: Map<string, number>
}

const ADMIN = 'fuzz-keys-admin-0123456789abcdefghijklmnopqrstuvwxyz'
// The API routes: the operational paths answer without a key.
const TARGETS: readonly Target[] = ALL_TARGETS.filter((t) => t.path.startsWith('/v1/'))

interface Keys {
  full: string
  readOnly: string
  revoked: string
  expired: string
  rotatedAway: string
}

type Case = { label: string; header: string; expect: (t: Target) => number[] | 'live' }

export async function runApiKeyFuzz(opts: { seed: number; requests: number; concurrency?: number; log?: (l: string) => void }): Promise<KeyFuzzResult> {
  const log = opts.log ?? console.log
  const nats = await startNats()
  const dir = mkdtempSync(path.join(tmpdir(), 'troupe-fuzz-keys-'))
  writeFileSync(path.join(dir, 'admin.key'), ADMIN, { mode: 0o600 })
  const troupe = await startTroupe({ natsUrl: nats.url, env: { TROUPE_ADMIN_KEY_FILE: path.join(dir, 'admin.key'), LOG_LEVEL: 'info' } }).catch(async (err) => {
    await nats.stop()
    throw err
  })
  try {
    const keys = await makeKeys(troupe.url)
    const transport: HttpTransport = process.env.TROUPE_HTTP === 'node' ? 'node' : 'uws'
    const port = Number(new URL(troupe.url).port)
    const failures: string[] = []
    const counts = new Map<string, number>()
    const rng = new Rng(opts.seed)
    const specs = Array.from({ length: opts.requests }, () => build(rng, keys))
    let next = 0
    const worker = async () => {
      for (let i = next++; i < specs.length; i = next++) {
        const { spec, want } = specs[i]!
        const outcome = await exchange(port, frame(spec, port), { method: spec.method, hangUp: false, timeoutMs: 30_000, settleMs: 0 })
        const verdict = judge(spec, outcome, transport)
        const status = outcome.kind === 'response' ? outcome.response.status : 0
        const bucket = `${spec.note} → ${status}`
        counts.set(bucket, (counts.get(bucket) ?? 0) + 1)
        const problems = verdict.problems.map((p) => `${p.rule}: ${p.detail}`)
        if (want === 'live' && (status === 401 || (status === 403 && !spec.route.startsWith('/v1/admin/')))) problems.push(`a live key refused: ${status}`)
        if (Array.isArray(want) && outcome.kind === 'response' && !want.includes(status)) problems.push(`not ${want.join('/')}: ${status}`)
        for (const p of problems) failures.push(`#${i} ${spec.method} ${spec.route} (${spec.note}): ${p}`)
      }
    }
    await Promise.all(Array.from({ length: opts.concurrency ?? 8 }, worker))
    log(`api key fuzz: seed ${opts.seed}, ${opts.requests} requests, ${failures.length} failures`)
    return { ok: failures.length === 0, failures, counts }
  } finally {
    await troupe.kill()
    await nats.stop()
  }
}

/** The keys the run presents, made through the admin routes with the file's admin key (itself freed of limits). */
async function makeKeys(url: string): Promise<Keys> {
  const admin = { 'x-api-key': ADMIN }
  const list = await raw(url, 'GET', '/v1/admin/api_keys', undefined, admin)
  if (list.status !== 200) throw new Error(`setup: the admin key lists keys with ${list.status}: ${list.text}`)
  const unlimited = { limits: { requests_per_second: 0, upload_bytes_per_minute: 0 } }
  await raw(url, 'POST', `/v1/admin/api_keys/${list.json.data[0].id}`, unlimited, admin)
  const make = async (body: object) => {
    const r = await raw(url, 'POST', '/v1/admin/api_keys', { name: 'fuzz', ...unlimited, ...body }, admin)
    if (r.status !== 200) throw new Error(`setup: a key answered ${r.status}: ${r.text}`)
    return r.json as { id: string; key: string }
  }
  const full = await make({})
  const readOnly = await make({ scope: 'read_only' })
  const revoked = await make({})
  await raw(url, 'POST', `/v1/admin/api_keys/${revoked.id}/revoke`, undefined, admin)
  const rotated = await make({})
  await raw(url, 'POST', `/v1/admin/api_keys/${rotated.id}/rotate`, undefined, admin)
  const expired = await make({ expires_in_seconds: 1 })
  // Refused once its second is over (the gateway compares with its clock; nothing to wait for but that).
  await until('the short key expired', async () => (await raw(url, 'GET', '/v1/agents', undefined, { 'x-api-key': expired.key })).status === 401, 10_000, 100)
  return { full: full.key, readOnly: readOnly.key, revoked: revoked.key, expired: expired.key, rotatedAway: rotated.key }
}

const FORGED_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'

function cases(rng: Rng, k: Keys): Case[] {
  const refused = () => [401]
  const admin = (t: Target) => t.path.startsWith('/v1/admin/')
  return [
    { label: 'forged', header: `sk-troupe-${Array.from({ length: 43 }, () => rng.pick([...FORGED_ALPHABET])).join('')}`, expect: refused },
    { label: 'truncated', header: k.full.slice(0, rng.between(1, k.full.length - 1)), expect: refused },
    { label: 'last char changed', header: k.full.slice(0, -1) + (k.full.endsWith('A') ? 'B' : 'A'), expect: refused },
    { label: 'one more char', header: `${k.full}A`, expect: refused },
    { label: 'revoked', header: k.revoked, expect: refused },
    { label: 'expired', header: k.expired, expect: refused },
    { label: 'rotated away', header: k.rotatedAway, expect: refused },
    { label: 'the admin file key, one char off', header: `${ADMIN.slice(0, -1)}!`, expect: refused },
    // A header past uWS's limit is its own 431; within it, just a key that is none.
    { label: 'huge', header: 'A'.repeat(rng.pick([600, 4096, 7000])), expect: () => [401, 431] },
    { label: 'non-ASCII', header: `${k.full.slice(0, 20)}${rng.pick(['é', 'ключ', '\u00ff'])}`, expect: () => [400, 401] },
    { label: 'empty', header: '', expect: refused },
    { label: 'read-only', header: k.readOnly, expect: (t) => (admin(t) || t.method !== 'GET' ? [403] : 'live') },
    { label: 'full', header: k.full, expect: (t) => (admin(t) ? [403] : 'live') },
    { label: 'admin', header: ADMIN, expect: () => 'live' },
  ]
}

function build(rng: Rng, k: Keys): { spec: HttpSpec; want: number[] | 'live' } {
  const t = rng.pick(TARGETS)
  const c = rng.pick(cases(rng, k))
  // Well-formed ids of each path's kind (most name nothing: a 404 past the key check is as good as any answer).
  const target = fillPath(t, (p) => (p === 'version' ? '1' : `${prefixOf(p)}_01FUZZKEYS${String(rng.int(1e6)).padStart(16, '0')}`))
  const where = rng.pick(['x-api-key', 'bearer', 'basic'] as const)
  const headers: Array<[string, string]> =
    where === 'x-api-key'
      ? [['x-api-key', c.header]]
      : where === 'bearer'
        ? [['authorization', `Bearer ${c.header}`]]
        : [['authorization', `Basic ${Buffer.from(`${c.header}:`).toString('base64')}`]]
  // Basic is no scheme of ours: whatever it carries, no key is presented.
  const want = where === 'basic' ? [401] : c.expect(t)
  const body = t.method === 'POST' && t.hasBody ? Buffer.from('{}') : undefined
  if (body) headers.push(['content-type', 'application/json'])
  const spec: HttpSpec = {
    kind: 'http',
    class: 'hostile-header',
    route: t.path,
    method: t.method,
    target,
    headers,
    note: `${c.label} (${where})`,
    ...(body ? { body } : {}),
  }
  return { spec, want }
}
