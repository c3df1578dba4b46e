import { Kvm } from '@nats-io/kv'
import { jetstream } from '@nats-io/jetstream'
import type { NatsConnection } from '@nats-io/transport-node'
import type { Logger } from 'pino'
import { ensureFileKey, KeyCheck, openApiKeys } from '../actors/apikey/index.js'
import { openBucket, retryWhileStarting, type Storage } from '../actors/kit/index.js'
import { RunningByKey } from '../actors/session/index.js'
import { Buckets } from '../protocol/subjects.js'
import type { KeyChecks } from '../gateway/types.js'
import type { Config } from './config.js'

export interface RunningKeyChecks {
  checks: KeyChecks
  /** The start-up block's `auth` line. */
  fact(): string
  stop(): void
}

/** Addresses only this machine reaches: a server bound to one of them may stay open (README "Protected mode"). */
export function isLoopback(host: string): boolean {
  const h = host
    .trim()
    .toLowerCase()
    .replace(/^\[|\]$/g, '')
  return h === 'localhost' || h === '::1' || /^127(\.\d{1,3}){3}$/.test(h) || /^::ffff:127(\.\d{1,3}){3}$/.test(h)
}

/**
 * The gateway's copy of the API keys (actors/apikey/check.ts), the admin key of TROUPE_ADMIN_KEY_FILE stored first, and
 * protected mode: a gateway off loopback with no key refuses to start unless TROUPE_AUTH=off, which is warned of at
 * every start. `hosts` counts the live hosts sharing each key's limits.
 */
export async function startKeyChecks(nc: NatsConnection, storage: Storage, cfg: Config, log: Logger, hosts: () => number): Promise<RunningKeyChecks> {
  const kvm = new Kvm(jetstream(nc))
  const { kv, clusterKey } = await openApiKeys(kvm, storage, log)
  if (cfg.adminKeyFile) {
    const id = await retryWhileStarting('TROUPE_ADMIN_KEY_FILE key', () => ensureFileKey(kv, clusterKey, cfg.adminKeyFile!), { log })
    log.info({ key: id, file: cfg.adminKeyFile }, 'admin key of TROUPE_ADMIN_KEY_FILE stored')
  }
  const check = new KeyCheck(kv, clusterKey)
  await check.start(log)
  const open = !isLoopback(cfg.host)
  if (open && cfg.auth !== 'off' && check.count === 0) {
    check.stop()
    throw new Error(
      `HOST=${cfg.host} is not a loopback address and no API key exists (protected mode): create one first ` +
        '(`troupe keys create --name admin --scope admin` with NATS_URL set), or give TROUPE_ADMIN_KEY_FILE, ' +
        'or set TROUPE_AUTH=off to serve everyone who reaches the port without a key',
    )
  }
  if (cfg.auth === 'off') {
    log.warn(
      { host: cfg.host },
      `TROUPE_AUTH=off: no API key is checked; anyone who reaches this server's HTTP port on ${cfg.host} may do everything${open ? ' (it is not a loopback address)' : ''}`,
    )
  }
  const mode = cfg.auth
  const running = new RunningByKey(() => openBucket(kvm, storage, Buckets.sessions))
  const checks: KeyChecks = {
    get on() {
      return mode === 'keys' || (mode === 'auto' && check.count > 0)
    },
    lookup: (presented) => check.lookup(presented),
    hosts,
    runningSessions: (keyId) => running.count(keyId),
    sessionRunning: (sessionId) => running.running(sessionId),
  }
  const fact = () => {
    if (mode === 'off') return 'off (TROUPE_AUTH=off): WARNING: no API key is checked; anyone who reaches this port may do everything'
    if (checks.on) return `keys checked (${check.count} key${check.count === 1 ? '' : 's'} stored; x-api-key or authorization: Bearer)`
    return 'open: no API key exists yet, so loopback only (the first key, troupe keys create, turns keys on)'
  }
  return {
    checks,
    fact,
    stop: () => {
      check.stop()
      running.stop()
    },
  }
}
