import { jetstream, jetstreamManager } from '@nats-io/jetstream'
import { Kvm } from '@nats-io/kv'
import pino from 'pino'
import { apiKeysOn, openApiKeys } from '../../actors/apikey/index.js'
import { isApiError } from '../../protocol/errors/api-error.js'
import { isId } from '../../protocol/ids.js'
import { type ApiKey, ApiKeyCreate, ApiKeyUpdate, type ApiKeyWithSecret, type KeyLimits } from '../../protocol/schemas/api-key.js'
import { parse as validate } from '../../protocol/validate.js'
import { findNats } from '../lockfile-info.js'
import { chooseReplicas } from '../replica-count.js'
import { needJetStream, parse, UsageError, type Io } from './io.js'

export const KEYS_USAGE = {
  synopsis: 'keys <create|list|rotate|revoke|update> …',
  summary:
    'API keys: create --name N [--workspace W] [--expires-in 30d] [--read-only|--scope admin] [limits], list, rotate ID, revoke ID, update ID [--name] [--expires-in] [limits]; --json',
}

const LIMIT_FLAGS = {
  rps: { type: 'string' },
  burst: { type: 'string' },
  sessions: { type: 'string' },
  'upload-mib-per-minute': { type: 'string' },
} as const

const UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400, w: 7 * 86400 }

/** `30d`, `12h`, `90m`, `3600s`, `2w` (or bare seconds) → seconds; `never` → null. */
export function durationSeconds(v: string): number | null {
  if (v === 'never') return null
  const m = /^(\d+)([smhdw]?)$/.exec(v.trim())
  if (!m) throw new UsageError(`--expires-in ${JSON.stringify(v)}: give a number and a unit (s, m, h, d, w), e.g. 30d, or never`)
  return Number(m[1]) * UNITS[m[2] || 's']!
}

function limitsOf(values: Record<string, unknown>): Partial<KeyLimits> | undefined {
  const n = (flag: string): number | undefined => {
    const v = values[flag]
    if (v === undefined) return undefined
    const x = Number(v)
    if (!Number.isInteger(x) || x < 0) throw new UsageError(`--${flag} must be a whole number of at least 0 (0: no limit), not ${JSON.stringify(v)}`)
    return x
  }
  const mib = n('upload-mib-per-minute')
  const out: Partial<KeyLimits> = {
    ...(n('rps') === undefined ? {} : { requests_per_second: n('rps')! }),
    ...(n('burst') === undefined ? {} : { burst: n('burst')! }),
    ...(n('sessions') === undefined ? {} : { concurrent_sessions: n('sessions')! }),
    ...(mib === undefined ? {} : { upload_bytes_per_minute: mib * 1024 * 1024 }),
  }
  return Object.keys(out).length ? out : undefined
}

const line = (k: ApiKey) =>
  [
    k.id,
    k.hint,
    k.scope,
    k.workspace_id,
    k.revoked_at ? `revoked ${k.revoked_at}` : k.expires_at ? `expires ${k.expires_at}` : 'never expires',
    `${k.limits.requests_per_second}/s burst ${k.limits.burst}`,
    JSON.stringify(k.name),
  ].join('  ')

/**
 * `troupe keys …`: the operator's API keys, written straight to the keys' bucket over NATS (no server needs to run, so
 * the first key can be made before a server that needs one starts). The same operations as the admin routes.
 */
export async function keys(args: string[], io: Io): Promise<void> {
  const [word, ...rest] = args
  const { values, positionals } = parse(rest, {
    json: { type: 'boolean' },
    name: { type: 'string' },
    workspace: { type: 'string' },
    'expires-in': { type: 'string' },
    'read-only': { type: 'boolean' },
    scope: { type: 'string' },
    ...LIMIT_FLAGS,
  })
  const id = positionals[0]
  const needsId = word === 'rotate' || word === 'revoke' || word === 'update'
  if (!['create', 'list', 'rotate', 'revoke', 'update'].includes(word ?? '')) throw new UsageError(`unknown keys command ${JSON.stringify(word ?? '')}`)
  if (needsId && (!id || !isId('apikey', id))) throw new UsageError(`name one key id: troupe keys ${word} apikey_…`)
  if (positionals.length > (needsId ? 1 : 0)) throw new UsageError(`unexpected argument ${positionals.slice(needsId ? 1 : 0).join(' ')}`)
  if (values['read-only'] && values.scope) throw new UsageError('give --read-only or --scope, not both')
  const expires = values['expires-in'] === undefined ? undefined : durationSeconds(values['expires-in'])
  const body = (schema: typeof ApiKeyCreate | typeof ApiKeyUpdate, input: Record<string, unknown>) => {
    try {
      return validate(schema, Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined)))
    } catch (err) {
      throw isApiError(err) ? new UsageError(err.message) : err
    }
  }
  const limits = limitsOf(values)
  const createBody =
    word === 'create'
      ? body(ApiKeyCreate, {
          name: values.name,
          workspace_id: values.workspace,
          scope: values['read-only'] ? 'read_only' : values.scope,
          expires_in_seconds: expires,
          limits,
        })
      : undefined
  const updateBody = word === 'update' ? body(ApiKeyUpdate, { name: values.name, expires_in_seconds: expires, limits }) : undefined

  const conn = await io.connect()
  needJetStream(conn)
  const js = jetstream(conn.nc)
  const jsm = await jetstreamManager(conn.nc)
  const replicas = await chooseReplicas(undefined, conn.nc, findNats(process.env).url)
  const log = pino({ level: 'warn' }, pino.destination(2))
  const { kv, clusterKey } = await openApiKeys(new Kvm(js), { jsm, replicas: replicas.count, log }, log)
  const { keys: store, close } = await apiKeysOn(kv, clusterKey, log)
  try {
    const shown = async (k: ApiKey | ApiKeyWithSecret) => {
      if (values.json) return io.out(JSON.stringify(k))
      io.out(line(k))
      if ('key' in k) {
        io.out(k.key)
        io.note('the key is shown this once: store it now (only its hash is kept)')
      }
    }
    if (word === 'create') return await shown(await store.create(createBody as typeof ApiKeyCreate.infer))
    if (word === 'rotate') return await shown(await store.rotate(id!))
    if (word === 'revoke') return await shown(await store.revoke(id!))
    if (word === 'update') return await shown(await store.update(id!, updateBody as typeof ApiKeyUpdate.infer))
    for (let page: string | undefined, first = true; first || page; first = false) {
      const got = await store.list({ limit: 1000, ...(page ? { page } : {}) })
      for (const k of got.data) values.json ? io.out(JSON.stringify(k)) : io.out(line(k))
      page = got.next_page ?? undefined
    }
  } catch (err) {
    // A key that is not there, or revoked: said as the route says it, exit 1.
    throw isApiError(err) ? new Error(err.message) : err
  } finally {
    close()
  }
}
