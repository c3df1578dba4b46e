import path from 'node:path'
import type { Config } from './config.js'
import type { EmbeddedNats } from './nats-server.js'

/** Settings that are each host's own: a second host on the same machine must not copy them. */
const PER_HOST = new Set(['TROUPE_DATA_DIR', 'TROUPE_NATS_PORT', 'TROUPE_NATS_HOST', 'PORT', 'HOST', 'NATS_URL'])
/** Settings naming a file, given to the new host as an absolute path (it may be started from elsewhere). */
const PATHS = new Set(['TROUPE_VAULT_KEYRING_FILE'])
/** A secret's value is never printed: the line passes it on from the shell's own environment. */
const SECRET = /KEY|SECRET|TOKEN|PASSWORD/

/**
 * The `scale` line of `troupe start`'s banner: a second host for this one's embedded NATS, with every setting of this
 * host that the cluster's hosts must share (the model endpoint, the keyring, the sandbox and limit settings, strict
 * mode), secrets by reference (`ANTHROPIC_API_KEY="$ANTHROPIC_API_KEY"`), never by value.
 */
export function joinHint(cfg: Config, nats: EmbeddedNats, env: NodeJS.ProcessEnv, cwd = process.cwd()): string {
  const shared = Object.keys(env)
    .filter((k) => (k.startsWith('TROUPE_') || k === 'ANTHROPIC_API_KEY') && !PER_HOST.has(k) && env[k]?.trim())
    .sort()
    .map((k) => (PATHS.has(k) ? `${k}=${quote(path.resolve(cwd, env[k]!))}` : SECRET.test(k) ? `${k}="$${k}"` : `${k}=${quote(env[k]!)}`))
  if (cfg.strict && !env.TROUPE_STRICT) shared.push('TROUPE_STRICT=1')
  const port = cfg.natsPort ? 'port set by TROUPE_NATS_PORT' : 'port kept across restarts while free; TROUPE_NATS_PORT fixes it'
  const reach = cfg.natsHost === '127.0.0.1' ? '; this machine only, TROUPE_NATS_HOST opens it' : ''
  return `${[`NATS_URL=${nats.joinUrl}`, 'PORT=0', 'TROUPE_DATA_DIR=./.troupe-2', ...shared].join(' ')} npx troupe serve (${port}${reach})`
}

/** A value as one shell word: bare when it is plainly safe, else single-quoted. */
const quote = (v: string) => (/^[A-Za-z0-9_@%+=:,./-]+$/.test(v) ? v : `'${v.replace(/'/g, `'\\''`)}'`)
