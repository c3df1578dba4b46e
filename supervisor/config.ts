import path from 'node:path'

/** Settings read from the environment; the names are a contract (README, outside checks). */
export interface Config {
  /** HTTP port. `PORT`, default 8080. */
  port: number
  /** HTTP interface. `HOST`, default 127.0.0.1. */
  host: string
  /** External NATS; unset means `start` launches an embedded nats-server. `NATS_URL`. */
  natsUrl?: string
  /** Where the embedded nats-server keeps JetStream. `TROUPE_DATA_DIR`, default ./.troupe */
  dataDir: string
  /** Messages API base URL. `TROUPE_MODEL_BASE_URL`. */
  modelBaseUrl?: string
  /** Key for the Messages API. `ANTHROPIC_API_KEY`. */
  anthropicApiKey?: string
  /** Operator keyring for webhook secrets and vaults. `TROUPE_VAULT_KEYRING_FILE`. */
  vaultKeyringFile?: string
  /**
   * Session tuning: `TROUPE_MODEL_RETRIES` (default 4), `TROUPE_MODEL_RETRY_BASE_MS` (default 1000),
   * `TROUPE_SESSION_IDLE_MS` (idle actors leave memory after this; default 30000), `TROUPE_MODEL_MAX_TOKENS`
   * (default 8192). Unset keys take the defaults.
   */
  session: { retries?: number; retryBaseMs?: number; idleMs?: number; maxTokens?: number }
  /** Comment keepalive interval of SSE streams. `TROUPE_SSE_KEEPALIVE_MS`, default 15000; 0 disables. */
  sseKeepaliveMs?: number
  /** Log level. `LOG_LEVEL`, default info. */
  logLevel: string
  strict: boolean
}

export function readConfig(env: NodeJS.ProcessEnv, strict: boolean): Config {
  const port = env.PORT === undefined || env.PORT === '' ? 8080 : Number(env.PORT)
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`PORT must be an integer from 0 to 65535 (was ${JSON.stringify(env.PORT)})`)
  const blank = (v: string | undefined) => (v === undefined || v.trim() === '' ? undefined : v)
  const count = (name: string, min: number): number | undefined => {
    const v = blank(env[name])
    if (v === undefined) return undefined
    const n = Number(v)
    if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be an integer of at least ${min} (was ${JSON.stringify(v)})`)
    return n
  }
  const session = Object.fromEntries(Object.entries({
    retries: count('TROUPE_MODEL_RETRIES', 0),
    retryBaseMs: count('TROUPE_MODEL_RETRY_BASE_MS', 0),
    idleMs: count('TROUPE_SESSION_IDLE_MS', 0),
    maxTokens: count('TROUPE_MODEL_MAX_TOKENS', 1),
  }).filter(([, v]) => v !== undefined))
  return {
    port,
    session,
    sseKeepaliveMs: count('TROUPE_SSE_KEEPALIVE_MS', 0),
    host: blank(env.HOST) ?? '127.0.0.1',
    natsUrl: blank(env.NATS_URL),
    dataDir: path.resolve(blank(env.TROUPE_DATA_DIR) ?? './.troupe'),
    modelBaseUrl: blank(env.TROUPE_MODEL_BASE_URL),
    anthropicApiKey: blank(env.ANTHROPIC_API_KEY),
    vaultKeyringFile: blank(env.TROUPE_VAULT_KEYRING_FILE),
    logLevel: blank(env.LOG_LEVEL) ?? 'info',
    strict,
  }
}
