import path from 'node:path'
import { DEFAULT_BODY_LIMIT } from '../gateway/server.js'
import { TRANSPORT_NAMES, type TransportName } from '../gateway/transport.js'
import { parseClock, systemClock, type Clock } from '../protocol/clock.js'
import { type AddressExceptions, parseAddressExceptions, type SandboxPlacement, type SessionTuning } from '../actors/kit/index.js'
import { readSandboxSetting, type SandboxSetting } from '../sandbox/index.js'

const MiB = 1024 * 1024
const mebibytes = (n: number | undefined) => (n === undefined ? undefined : n * MiB)

/** Settings read from the environment; the names are a contract (README, outside checks). */
export interface Config {
  /** HTTP port. `PORT`, default 8080. */
  port: number
  /** HTTP interface. `HOST`, default 127.0.0.1. */
  host: string
  /** The HTTP server: `uws` (uWebSockets.js) or `node` (node:http). `TROUPE_HTTP`, default uws. */
  http: TransportName
  /** External NATS; unset means `start` launches an embedded nats-server. `NATS_URL`. */
  natsUrl?: string
  /**
   * The embedded nats-server's client port. `TROUPE_NATS_PORT`; default: the port it had last time on this data
   * directory while that is free, else a free one. Unused with `NATS_URL`.
   */
  natsPort?: number
  /** The interface the embedded nats-server listens on. `TROUPE_NATS_HOST`, default 127.0.0.1. Unused with `NATS_URL`. */
  natsHost: string
  /**
   * Copies of every stream and bucket, on that many servers of a JetStream cluster. `TROUPE_REPLICAS`, at most 5;
   * more than 1 needs an external cluster (`NATS_URL`) of at least that many servers. Default (unset): chosen once
   * connected, 3 where at least 3 JetStream servers answer, else 1 (`replica-count.ts`).
   */
  replicas?: number
  /** Where the embedded nats-server keeps JetStream. `TROUPE_DATA_DIR`, default ./.troupe */
  dataDir: string
  /** Messages API base URL. `TROUPE_MODEL_BASE_URL`. */
  modelBaseUrl?: string
  /** Key for the Messages API. `ANTHROPIC_API_KEY`. */
  anthropicApiKey?: string
  /** Operator keyring for webhook secrets and vaults. `TROUPE_VAULT_KEYRING_FILE`. */
  vaultKeyringFile?: string
  /**
   * Development only: webhook endpoint host names delivered to a loopback address and port instead of where DNS says,
   * unchecked (`TROUPE_WEBHOOK_DEV_HOSTS=hooks.example.test=127.0.0.1:8443,…`; `=http://127.0.0.1:8787` for plain HTTP).
   * Default none; logged when set.
   */
  webhookDevHosts: Map<string, { address: string; port: number; plain?: boolean }>
  /**
   * Host names, addresses and CIDR ranges MCP servers may be at although they are not public (loopback, a private
   * network): `TROUPE_MCP_ALLOW_HOSTS=mcp.internal,10.0.0.0/8,127.0.0.1`. Default none; logged when set.
   */
  mcpAllowHosts: AddressExceptions
  /**
   * Session tuning: `TROUPE_MODEL_RETRIES` (default 4), `TROUPE_MODEL_RETRY_BASE_MS` (default 1000),
   * `TROUPE_SESSION_IDLE_MS` (idle actors leave memory after this; default 30000), `TROUPE_SESSION_RUNNING_RECORD_MS`
   * (a turn's record says running once it has run this long; default 200), `TROUPE_MODEL_MAX_TOKENS` (default 8192),
   * `TROUPE_TURN_TOOL_ROUNDS` (tool-use rounds a turn may run; default 200), `TROUPE_TURN_CUT_OFF_CALLS` (cut-off
   * single-call responses in a row that stop a turn; default 3),
   * `TROUPE_SESSION_SHELL_IDLE_MS` (a session with a live shell leaves memory, and its shell goes, after this; default
   * 600000), `TROUPE_WORKSPACE_MAX_FILES` (files, directories and links a workspace may hold and still be saved for a
   * move to another host; default 10000) and `TROUPE_WORKSPACE_MAX_MIB` (MiB of files, the same; default 1024).
   * Unset keys take the defaults.
   */
  session: Partial<SessionTuning>
  /**
   * Serve a call in-process when this host serves its subject: no NATS round trip, no msgpack; and feed the SSE
   * streams of sessions it owns in-process. `TROUPE_LOCAL_CALLS`, default on; `0` (or `off`, `false`) sends every
   * call over NATS and tails every stream there, so `troupe sub` sees each one (debugging).
   */
  localCalls: boolean
  /**
   * The time schedules see (deployments' upcoming runs, the scheduler's firing), for tests: `TROUPE_SCHEDULE_CLOCK`
   * (`start=<RFC 3339>,rate=<n>,since=<epoch ms>`, protocol/clock.ts). Default the system clock.
   */
  scheduleClock: Clock
  /** Comment keepalive interval of SSE streams. `TROUPE_SSE_KEEPALIVE_MS`, default 15000; 0 disables. */
  sseKeepaliveMs?: number
  /**
   * Bytes of large bodies queued or being parsed at once, past which a body is answered 503.
   * `TROUPE_PARSE_BUDGET_MIB` in MiB, default 256, at least 32 (the body limit: the largest body always fits).
   */
  parseBudget?: number
  /**
   * Where tools run: `TROUPE_SANDBOX` (`isolated`, `local`; default isolated where it can start, else local) and the
   * isolated sandboxes' limits (`TROUPE_SANDBOX_MEMORY_MIB` default 2048, `TROUPE_SANDBOX_PIDS` default 256,
   * `TROUPE_SANDBOX_CPU_SECONDS` default 3600, `TROUPE_SANDBOX_FILES` default 1024, `TROUPE_SANDBOX_DISK_MIB` default
   * 4096), the budget of all of them together (`TROUPE_SANDBOXES_MEMORY_MIB`, `TROUPE_SANDBOXES_PIDS`: defaults from
   * the machine), their egress connections (`TROUPE_SANDBOX_CONNECTIONS` default 256, `TROUPE_FD_RESERVE`) and host
   * uid (`TROUPE_SANDBOX_UID`, default 65534, when run as root); sandbox/backend.ts reads them.
   */
  sandbox: SandboxSetting
  /**
   * Where a `serve` host's sessions run their tools: `here` (its own sandboxes) or `remote` (on `troupe sandbox`
   * hosts, which then need no gateway or actor host of their own). `TROUPE_SANDBOX_PLACEMENT`, default `here`;
   * `start` always runs them here.
   */
  sandboxPlacement: SandboxPlacement
  /** Largest file an upload may carry. `TROUPE_FILE_MAX_MIB` in MiB, default 500, at least 1. */
  fileLimit?: number
  /** How old stored bytes no record names must be before they are swept, and how often sweeps run. `TROUPE_SWEEP_AGE_S`, default 600. */
  sweepAgeMs?: number
  /** Log level. `LOG_LEVEL` (one of `LOG_LEVELS`, any case), default info. */
  logLevel: string
  /** `LOG_FORMAT`: `json` (default, one JSON object per line on stderr) or `pretty` (for a person at a terminal). */
  logFormat: 'json' | 'pretty'
  /** Compatibility headers required: the `-strict`/`--strict` flag, `TROUPE_STRICT=1` or `npm start -strict`. Default off. */
  strict: boolean
  /**
   * Whether API keys are checked (README "API keys"): `auto` once any key exists, `keys` always (no key, no access),
   * `off` never (a server off loopback then warns at every start). `TROUPE_AUTH`, default auto.
   */
  auth: AuthMode
  /** A file holding the first admin key, stored at start when missing (at least 32 characters). `TROUPE_ADMIN_KEY_FILE`, default none. */
  adminKeyFile?: string
  /** Prometheus metrics recorded and served (`GET /metrics` on the gateway). `TROUPE_METRICS`, default on; `off` records nothing. */
  metrics: boolean
  /**
   * A port of its own serving only `GET /metrics`, on `HOST`: for `troupe orchestrate` and `troupe sandbox`, which have
   * no gateway, or to keep metrics off a public API port. `TROUPE_METRICS_PORT`, default none (0 picks a free one).
   */
  metricsPort?: number
}

export type AuthMode = 'auto' | 'keys' | 'off'

export function readConfig(env: NodeJS.ProcessEnv, strict: boolean): Config {
  const port = portNumber('PORT', env.PORT, 0) ?? 8080
  const blank = (v: string | undefined) => (v === undefined || v.trim() === '' ? undefined : v)
  const count = (name: string, min: number): number | undefined => {
    const v = blank(env[name])
    if (v === undefined) return undefined
    const n = Number(v)
    if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be an integer of at least ${min} (was ${JSON.stringify(v)})`)
    return n
  }
  const seconds = (n: number | undefined) => (n === undefined ? undefined : n * 1000)
  const session = Object.fromEntries(
    Object.entries({
      retries: count('TROUPE_MODEL_RETRIES', 0),
      retryBaseMs: count('TROUPE_MODEL_RETRY_BASE_MS', 0),
      idleMs: count('TROUPE_SESSION_IDLE_MS', 0),
      runningRecordMs: count('TROUPE_SESSION_RUNNING_RECORD_MS', 0),
      maxTokens: count('TROUPE_MODEL_MAX_TOKENS', 1),
      maxToolRounds: count('TROUPE_TURN_TOOL_ROUNDS', 1),
      maxCutOffCalls: count('TROUPE_TURN_CUT_OFF_CALLS', 1),
      contextWindow: count('TROUPE_CONTEXT_WINDOW', 1000),
      shellIdleMs: count('TROUPE_SESSION_SHELL_IDLE_MS', 0),
      workspaceMaxEntries: count('TROUPE_WORKSPACE_MAX_FILES', 1),
      workspaceMaxBytes: mebibytes(count('TROUPE_WORKSPACE_MAX_MIB', 1)),
    }).filter(([, v]) => v !== undefined),
  )
  return {
    port,
    session,
    sseKeepaliveMs: count('TROUPE_SSE_KEEPALIVE_MS', 0),
    localCalls: onOff('TROUPE_LOCAL_CALLS', env.TROUPE_LOCAL_CALLS, true),
    scheduleClock: scheduleClock(blank(env.TROUPE_SCHEDULE_CLOCK)),
    parseBudget: mebibytes(count('TROUPE_PARSE_BUDGET_MIB', DEFAULT_BODY_LIMIT / MiB)),
    fileLimit: mebibytes(count('TROUPE_FILE_MAX_MIB', 1)),
    sweepAgeMs: seconds(count('TROUPE_SWEEP_AGE_S', 1)),
    host: blank(env.HOST) ?? '127.0.0.1',
    http: httpTransport(blank(env.TROUPE_HTTP)),
    natsUrl: blank(env.NATS_URL),
    natsPort: portNumber('TROUPE_NATS_PORT', env.TROUPE_NATS_PORT, 1),
    natsHost: blank(env.TROUPE_NATS_HOST) ?? '127.0.0.1',
    replicas: replicas(count('TROUPE_REPLICAS', 1), blank(env.NATS_URL)),
    dataDir: path.resolve(blank(env.TROUPE_DATA_DIR) ?? './.troupe'),
    modelBaseUrl: modelBaseUrl(blank(env.TROUPE_MODEL_BASE_URL)),
    anthropicApiKey: blank(env.ANTHROPIC_API_KEY),
    vaultKeyringFile: blank(env.TROUPE_VAULT_KEYRING_FILE),
    webhookDevHosts: webhookDevHosts(blank(env.TROUPE_WEBHOOK_DEV_HOSTS)),
    mcpAllowHosts: parseAddressExceptions(env.TROUPE_MCP_ALLOW_HOSTS, 'TROUPE_MCP_ALLOW_HOSTS'),
    sandbox: readSandboxSetting(env),
    sandboxPlacement: sandboxPlacement(blank(env.TROUPE_SANDBOX_PLACEMENT)),
    logLevel: logLevel(blank(env.LOG_LEVEL)),
    logFormat: logFormat(blank(env.LOG_FORMAT)),
    auth: authMode(blank(env.TROUPE_AUTH)),
    adminKeyFile: blank(env.TROUPE_ADMIN_KEY_FILE),
    metrics: onOff('TROUPE_METRICS', env.TROUPE_METRICS, true),
    metricsPort: portNumber('TROUPE_METRICS_PORT', env.TROUPE_METRICS_PORT, 0),
    strict: strict || onOff('TROUPE_STRICT', env.TROUPE_STRICT) || (env.npm_lifecycle_event === 'start' && onOff('npm_config_strict', env.npm_config_strict)),
  }
}

function portNumber(name: string, v: string | undefined, min: 0 | 1): number | undefined {
  if (v === undefined || v.trim() === '') return undefined
  const n = Number(v)
  if (!Number.isInteger(n) || n < min || n > 65535) throw new Error(`${name} must be an integer from ${min} to 65535 (was ${JSON.stringify(v)})`)
  return n
}

/**
 * A switch: `1`/`true`/`on` or `0`/`false`/`off`. Anything else stops start-up: a safety switch (strict mode) must never
 * be read as off by mistake. `npm start -strict` reaches us as `npm_config_strict=true`: npm takes `-strict` as a
 * setting of its own and passes it to the script in the environment, not as an argument.
 */
function onOff(name: string, v: string | undefined, byDefault = false): boolean {
  const s = v?.trim().toLowerCase() ?? ''
  if (s === '') return byDefault
  if (['1', 'true', 'on'].includes(s)) return true
  if (['0', 'false', 'off'].includes(s)) return false
  throw new Error(`${name} must be 1, true or on, or 0, false or off (was ${JSON.stringify(v)})`)
}

/**
 * The Messages API's base URL: an http or https URL. A value without a scheme (`localhost:9000`) would otherwise be
 * taken as one whose scheme is `localhost:`, and every turn would fail its requests and retry them to exhaustion.
 */
function modelBaseUrl(v: string | undefined): string | undefined {
  if (v === undefined) return undefined
  let url: URL | undefined
  try {
    url = new URL(v.trim())
  } catch {}
  if (url && (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname) return v.trim()
  throw new Error(`TROUPE_MODEL_BASE_URL must be an http:// or https:// URL, such as http://127.0.0.1:9000 (was ${JSON.stringify(v)})`)
}

/** pino's levels, quietest last. */
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const

/** `LOG_LEVEL`, checked here so that a wrong one is named with what is allowed (pino's own message names neither). */
function logLevel(v: string | undefined): string {
  if (v === undefined) return 'info'
  const level = v.trim().toLowerCase()
  if ((LOG_LEVELS as readonly string[]).includes(level)) return level
  throw new Error(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')} (was ${JSON.stringify(v)})`)
}

function replicas(n: number | undefined, natsUrl: string | undefined): number | undefined {
  if (n === undefined) return undefined
  if (n > 5) throw new Error(`TROUPE_REPLICAS must be at most 5, NATS's limit (was ${n})`)
  if (n > 1 && !natsUrl) {
    throw new Error(`TROUPE_REPLICAS=${n} needs a JetStream cluster of at least ${n} servers (set NATS_URL); the embedded nats-server keeps one copy`)
  }
  return n
}

function scheduleClock(v: string | undefined): Clock {
  if (v === undefined) return systemClock
  try {
    return parseClock(v)
  } catch (err) {
    throw new Error(`TROUPE_SCHEDULE_CLOCK: ${(err as Error).message} (was ${JSON.stringify(v)})`)
  }
}

/**
 * `host=address:port,…`, each address a loopback one (127.0.0.0/8 or [::1]); `host=http://address:port` delivers over
 * plain HTTP (a local receiver without a certificate, such as `troupe webhooks listen`).
 */
function webhookDevHosts(v: string | undefined): Map<string, { address: string; port: number; plain?: boolean }> {
  const out = new Map<string, { address: string; port: number; plain?: boolean }>()
  for (const item of v ? v.split(',') : []) {
    const m = /^([a-z0-9.-]+)=(http:\/\/)?(127(?:\.\d{1,3}){3}|\[::1\]):(\d{1,5})$/i.exec(item.trim())
    const port = Number(m?.[4])
    if (!m || port < 1 || port > 65535) {
      throw new Error(
        `TROUPE_WEBHOOK_DEV_HOSTS must be host=address:port or host=http://address:port items, each address on loopback (was ${JSON.stringify(item)})`,
      )
    }
    out.set(m[1]!.toLowerCase(), { address: m[3]!.replace(/^\[|\]$/g, ''), port, ...(m[2] ? { plain: true } : {}) })
  }
  return out
}

function sandboxPlacement(v: string | undefined): SandboxPlacement {
  if (v === undefined || v === 'here' || v === 'remote') return v ?? 'here'
  throw new Error(`TROUPE_SANDBOX_PLACEMENT must be here or remote (was ${JSON.stringify(v)})`)
}

function logFormat(v: string | undefined): 'json' | 'pretty' {
  if (v === undefined || v === 'json' || v === 'pretty') return v ?? 'json'
  throw new Error(`LOG_FORMAT must be json or pretty (was ${JSON.stringify(v)})`)
}

function httpTransport(v: string | undefined): TransportName {
  if (v === undefined) return 'uws'
  if ((TRANSPORT_NAMES as readonly string[]).includes(v)) return v as TransportName
  throw new Error(`TROUPE_HTTP must be ${TRANSPORT_NAMES.join(' or ')} (was ${JSON.stringify(v)})`)
}

function authMode(v: string | undefined): AuthMode {
  const m = v?.trim().toLowerCase() ?? 'auto'
  if (m === 'auto' || m === 'keys' || m === 'off') return m
  throw new Error(`TROUPE_AUTH must be auto, keys or off (was ${JSON.stringify(v)})`)
}
