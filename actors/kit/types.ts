import type { NatsConnection } from '@nats-io/transport-node'
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream'
import type { Kvm } from '@nats-io/kv'
import type { Logger } from 'pino'
import type { Clock } from '../../protocol/clock.js'
import type { LocalTails } from '../../protocol/event-item.js'
import type { KindContract } from '../../protocol/ops/define.js'
import type { ActorClient } from './client.js'
import type { OpTable } from './ops.js'
import type { AddressExceptions } from './public-address.js'
import type { Storage } from './replicas.js'
import type { SandboxHostBeat } from '../../protocol/subjects.js'
import type { SandboxBackend } from '../../sandbox/index.js'
import type { Keyring } from './keyring.js'
import type { Roster } from './roster.js'

/** What a host hands every actor kind when it starts it. */
export interface HostContext {
  nc: NatsConnection
  js: JetStreamClient
  jsm: JetStreamManager
  kvm: Kvm
  /** Where streams and buckets are kept (replicas): pass to openBucket and stream creation. */
  storage: Storage
  log: Logger
  hostId: string
  /** Environment-derived settings a kind may need (model endpoint, keys, data dir). */
  settings: HostSettings
  /**
   * Whether this host may serve (and write for) partition p of a kind right now: it holds it and its heartbeat
   * is fresh. False from before another host could take it over until the host has re-read its records.
   */
  serves(kind: string, p: number): boolean
  /**
   * Resolves once this host serves partition p of a kind again after its heartbeat lapsed (true: it claimed the
   * partition back at the revision it held it at, so no other host served it meanwhile), or once it gave it up or
   * `ms` passed (false). At once with `serves` when that is already true.
   */
  whenServing(kind: string, p: number, ms: number): Promise<boolean>
  /**
   * The revision of the placement record under which this host holds partition p of a kind (undefined: it does not).
   * A later holder's is always higher, so an actor made while its host holds p can fence what it asks of others
   * with it (a sandbox host refuses calls of an earlier activation once a later one called).
   */
  holding(kind: string, p: number): number | undefined
  /**
   * The sandbox hosts that run now (`troupe sandbox`), present when this host's sessions run their tools there
   * (`TROUPE_SANDBOX_PLACEMENT=remote`); absent when they run here.
   */
  sandboxHosts?: Roster<SandboxHostBeat>
  /**
   * No other host's heartbeat is live: no gateway outside this process is serving (every gateway runs beside an
   * actor host), so nothing outside it can be tailing what this host owns.
   */
  alone(): boolean
  /**
   * Why the live hosts' operator keyrings cannot work together (a key id holding different keys, a sealing key another
   * host lacks), or undefined when they can: what seals or opens secrets refuses meanwhile.
   */
  keyringConflict(): string | undefined
  /** Calls another kind's op (typed by its contract); throws the actor's ApiError. */
  client: ActorClient
}

export interface HostSettings {
  /** Base URL of the Messages API; unset means model turns end with a clear session.error. */
  modelBaseUrl?: string
  anthropicApiKey?: string
  dataDir: string
  /** Copies of every stream and bucket (`TROUPE_REPLICAS`, or the default the cluster gave). Default 1. */
  replicas?: number
  /**
   * Serve a call in this process when its subject is served here (`TROUPE_LOCAL_CALLS`, default true): no NATS round
   * trip, no msgpack; and SSE tails of the sessions it owns fed in-process (no NATS subscription). False sends every
   * call and every event over NATS, so `troupe sub` sees them all (debugging).
   */
  localCalls?: boolean
  /** `replicas` was set by `TROUPE_REPLICAS`, so an existing stream with more copies is brought down to it. Default false. */
  replicasExplicit?: boolean
  /** The time schedules see, in epoch ms (`TROUPE_SCHEDULE_CLOCK`, a testing aid). Default the system clock. */
  scheduleClock?: Clock
  /** Where sessions' tools run (`TROUPE_SANDBOX`, chosen at start-up). Default the local backend (host processes). */
  sandbox?: SandboxBackend
  /**
   * `TROUPE_SANDBOX_PLACEMENT`: `here`, sessions' sandboxes run on the host that owns the session; `remote`, on the
   * sandbox hosts (`troupe sandbox`), chosen per session by rendezvous hashing. Default `here`.
   */
  sandboxPlacement?: SandboxPlacement
  /** The largest file stored (`TROUPE_FILE_MAX_MIB`): a session output larger is not published. Default 500 MiB. */
  fileMaxBytes?: number
  /**
   * How old stored bytes no record names (an upload whose host died before recording it) must be before they are
   * swept, and how often every host sweeps (`TROUPE_SWEEP_AGE_S`). Default 600 000 (10 min).
   */
  sweepAgeMs?: number
  /**
   * The operator keyring (`TROUPE_VAULT_KEYRING_FILE`), which seals vault secrets. Default none: vault writes answer 422
   * and sessions naming vaults are refused.
   */
  keyring?: Keyring
  /**
   * The key that signs work items' sessions tokens (actors/work/token-key.ts), loaded by the host at start. Default:
   * the work kind loads it itself (a test host).
   */
  tokenKey?: Uint8Array
  /**
   * `TROUPE_MCP_ALLOW_HOSTS`: host names, addresses and ranges sessions' MCP connections may reach although they are
   * not public. Default none.
   */
  mcpAllowHosts?: AddressExceptions
  /** Session actor tuning (retries, backoff, passivation, workspaces); defaults in actors/session/index.ts. */
  session?: Partial<SessionTuning>
}

export type SandboxPlacement = 'here' | 'remote'

/** How a host's session actors behave (its settings: `HostSettings.session`). */
export interface SessionTuning {
  /** Retries of a failed model request before the turn gives up (retries_exhausted). */
  retries: number
  /** First backoff pause; doubles per attempt up to 30 s, unless the provider says when to come back. */
  retryBaseMs: number
  /** An idle session actor leaves memory after this long without work (its state is in KV and the stream). */
  idleMs: number
  /**
   * A turn's record says it runs once the turn has run this long: a quicker turn's idle record would replace it at
   * once (every host receives every record write, for lists). Lists show a running turn this much later; reads of
   * the session itself come from its actor.
   */
  runningRecordMs: number
  /** max_tokens of each model request. */
  maxTokens: number
  /**
   * Tool-use rounds one turn may run (one model response that calls tools, plus running them, is a round); the turn
   * stops with `tool_use_limit_reached_error` when the model asks for one more. Default 200.
   */
  maxToolRounds: number
  /**
   * Model responses in a row, within one turn, that each request a single tool call and are cut off (output limit or
   * context window) before the call is complete; at this many the turn stops with `tool_use_limit_reached_error`.
   * Default 3.
   */
  maxCutOffCalls: number
  /**
   * The models' context window, in tokens: the skill description budget is 1% of it, and a request estimated past it
   * compacts its injected skill instructions (skill-context.ts). Default 200,000.
   */
  contextWindow: number
  /** A session whose shell is live stays in memory this long after its last work (its shell goes when it leaves). */
  shellIdleMs: number
  /** Files, directories and links a workspace may hold and still be saved for a move (actors/workdir/workspace/sync.ts). */
  workspaceMaxEntries: number
  /** Bytes of files a workspace may hold and still be saved. */
  workspaceMaxBytes: number
}

/** A kind running on one host: its op table, its partitions' lifecycle (owner-placed ops), and how to stop it. */
export interface KindRuntime {
  ops: OpTable
  /** This host serves partition p of the kind from now (owner-placed ops only): resume what was in flight there. */
  acquired?(partition: number): Promise<void>
  /**
   * Partition p goes to another host: everything of it stops here, without writing. `handOver`: this host names the
   * next owner once this returns (an orderly hand-over, not a lost partition), so what only the owner writes may
   * still be tidied.
   */
  released?(partition: number, handOver: boolean): Promise<void>
  /** The SSE tails its owners feed in-process (sessions), for a gateway in the same process; none when calls are not local. */
  localTails?: LocalTails
  close(): Promise<void>
}

/**
 * An actor kind: its contract (protocol/ops) and how a host starts it. Ops placed on any host are served by every
 * host through a queue group; ops placed on the owner reach the one host that holds the id's partition.
 */
export interface ActorKindDef {
  contract: KindContract
  start(ctx: HostContext): Promise<KindRuntime>
}
