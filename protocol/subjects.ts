import { fnv1a } from './hash.js'
import type { Op } from './ops/define.js'

/**
 * Every NATS subject and JetStream name Troupe uses, so that `nats sub 'troupe.>'` reads as a story. An op
 * placed on any host is `troupe.<kind>.<op>`; one placed on the owner of an id is `troupe.<kind>.pNN.<id>.<op>`
 * (see protocol/ops):
 *
 *   troupe.agent.create                       gateway → any agent actor (queue group troupe.agent)
 *   troupe.agent.p12.agent_01….get           gateway → the host that owns agent partition 12
 *   troupe.environment.delete                 gateway → any environment actor
 *   troupe.session.p07.sesn_01…​.events.send   gateway → the one host owning partition 07
 *   troupe.session.list                       gateway → any host (queue group troupe.session), from its projection
 *   troupe.events.sesn_01….primary            session actor → JetStream (the session's history)
 *   troupe.live.sesn_01….primary              JetStream republish of stored events, plus the actor's stream-only
 *                                             previews and deletion notice → gateways tailing SSE streams
 *   troupe.host.ping                          gateway readiness → every actor host
 */

/** An actor kind's name (its contract's `kind`, protocol/ops): the second token of its subjects. */
export type KindName = string

/** Fixed partition count for single-activation kinds; every process must agree on it. */
export const PARTITIONS = 32

export const actorSubject = (kind: string, op: string) => `troupe.${kind}.${op}`
export const actorQueue = (kind: string) => `troupe.${kind}`

export const partitionOf = (id: string): number => fnv1a(id) % PARTITIONS

export const partitionToken = (p: number) => `p${String(p).padStart(2, '0')}`
export const partitionedSubject = (kind: string, id: string, op: string) => `troupe.${kind}.${partitionToken(partitionOf(id))}.${id}.${op}`

/**
 * The subject an operation is served on: its kind's queue group for ops placed on any host, the partition of `id`
 * for ops placed on its owner. `id` must have passed the id check (protocol/ids.ts isId) of the op's kind.
 */
export const opSubject = (op: Pick<Op, 'kind' | 'name' | 'placement'>, id: string | undefined): string => {
  if (op.placement === 'any') return actorSubject(op.kind, op.name)
  if (id === undefined) throw new Error(`${op.kind}.${op.name} is placed on the owner of an id, and was called without one`)
  return partitionedSubject(op.kind, id, op.name)
}
/**
 * The id and op of a subject from `partitionedSubject` (`troupe.<kind>.pNN.<id>.<op>`, the op may hold dots);
 * undefined for anything else.
 */
export function parsePartitionedSubject(subject: string): { kind: string; partition: number; id: string; op: string } | undefined {
  const m = /^troupe\.([^.]+)\.p(\d\d)\.([^.]+)\.(.+)$/.exec(subject)
  return m ? { kind: m[1]!, partition: Number(m[2]), id: m[3]!, op: m[4]! } : undefined
}

/** The kind and op of a subject from `actorSubject` (`troupe.<kind>.<op>`); undefined for anything else. */
export function parseActorSubject(subject: string): { kind: string; op: string } | undefined {
  const m = /^troupe\.([^.]+)\.(.+)$/.exec(subject)
  return m && !parsePartitionedSubject(subject) ? { kind: m[1]!, op: m[2]! } : undefined
}

/** What the owner of partition `p` subscribes to. */
export const partitionWildcard = (kind: KindName, p: number) => `troupe.${kind}.${partitionToken(p)}.>`

export const HOST_PING = 'troupe.host.ping'
/**
 * Core NATS, no replies: a work item's claim ended (stopped, its lease lapsed, or handed out again), as
 * `{w: work id, n: claim}`, so every gateway refuses that claim's sessions token on the session's routes from then on.
 */
export const WORK_CLAIM_ENDED = 'troupe.work.claim_ended'
/** Each actor host answers here while its NATS connection lives (supervisor/presence.ts). */
export const hostPresenceSubject = (hostId: string) => `troupe.presence.${hostId}`

/** KV buckets. */
export const Buckets = {
  agents: 'troupe_agents',
  environments: 'troupe_environments',
  sessions: 'troupe_sessions',
  /** `deployment.<id>` → the deployment's state (with the runs whose intent is stored); `work.<id>` while it has some. */
  deployments: 'troupe_deployments',
  /** `run.<id>` → a recorded deployment run (immutable). */
  deploymentRuns: 'troupe_deployment_runs',
  /** `claim.<deployment id>.<occurrence ms>` → an orchestrator's lease on firing one occurrence; short max age. */
  scheduleClaims: 'troupe_schedule_claims',
  /** `orch.<orchestrator id>` → one heartbeat per running scheduler (`orchestrate`, `start`); max age = its liveness TTL. */
  orchestrators: 'troupe_orchestrators',
  /** `<kind>.pNN` → `{host, at}`: who serves each partition; written only when ownership changes. */
  placement: 'troupe_placement',
  /** `host.<host id>` → `HostBeat`: one heartbeat per host; the bucket's max age is the liveness TTL. */
  hosts: 'troupe_hosts',
  /** `file.<id>` → a file's metadata, written once its bytes are whole in the `troupe_files` object store. */
  files: 'troupe_file_records',
  /** `vault.<id>` → a vault's state, its credentials (secrets sealed) inside it. */
  vaults: 'troupe_vaults',
  /** `skill.<id>` → a skill's state with its versions; `title.<hash>` → the skill holding an explicit display_title. */
  skills: 'troupe_skills',
  /** `webhook.<id>` → a webhook endpoint's state, its signing secret sealed (actors/webhook/state.ts). */
  webhooks: 'troupe_webhooks',
  /** `source.<stream>` → where the webhook fan-out of a source stream stands, and which orchestrator reads it (actors/webhook/source-reader.ts). */
  webhookFanOut: 'troupe_webhook_fanout',
  /** `outputs.<session id>` → what of the session's outputs folder is published (actors/workdir/outputs/state.ts). */
  sessionOutputs: 'troupe_session_outputs',
  /** `work_queue.<env id>` → an environment's self-hosted work items and their leases (actors/work/state.ts); `token-key` → the sessions tokens' HMAC key. */
  workQueues: 'troupe_work_queues',
  /** `memory_store.<id>` → a memory store's state (actors/memory/state.ts); `work.<id>` while a deleted store's memories are being removed. */
  memoryStores: 'troupe_memory_stores',
  /**
   * A store's memories, each key beginning with the store's id (one subject wildcard per store): `<store>.m.<memory
   * id>` its head, `<store>.v.<version id>` a version the head moved past, `<store>.c.<version id>` a version's content
   * (actors/memory/records.ts).
   */
  memories: 'troupe_memories',
  /** `dream.<id>` → a dream's state (actors/dream/state.ts); `work.<id>` while it is pending, running or holding a store. */
  dreams: 'troupe_dreams',
  /** `key.<id>` → an API key's record (its secret only as a keyed hash, actors/apikey/records.ts); `secret` → the cluster's HMAC key of them. */
  apiKeys: 'troupe_api_keys',
} as const

/** JetStream object stores (their streams are `OBJ_<name>`). */
export const ObjectStores = {
  /** A file's bytes, named by its id; visible only once complete (its meta entry is written last). */
  files: 'troupe_files',
  /**
   * Each session's workspace as its last completed tool call left it (actors/workdir/workspace/store.ts): one object
   * named by the session id, its manifest, and the bytes of its files as chunks on `$O.troupe_workspaces.C.<session
   * id>.<nuid>`, one subject per file version, so a session's bytes are one purge.
   */
  workspaces: 'troupe_workspaces',
  /** Skill versions' canonical zips, each named `<skill id>.<suffix>` (an upload attempt's own, as files' are). */
  skills: 'troupe_skill_bundles',
} as const

/** The stream an object store keeps its chunks and meta in (nats.js's layout). */
export const objectStream = (store: string) => `OBJ_${store}`
/** The subject prefix of an object's chunks in that stream: `<prefix><object nuid>` (nats.js's layout). */
export const objectChunkPrefix = (store: string) => `$O.${store}.C.`
/** The subject prefix of objects' meta entries (nats.js's layout). */
export const objectMetaPrefix = (store: string) => `$O.${store}.M.`
/** The subject of an object's meta entry: its name in padded base64url (nats.js's layout). */
export const objectMetaSubject = (store: string, name: string) =>
  `$O.${store}.M.${Buffer.from(name).toString('base64').replace(/\+/g, '-').replace(/\//g, '_')}`

/** What each host writes to `troupe_hosts` on every heartbeat (msgpack). */
export interface HostBeat {
  /** Wall-clock ms of this beat. */
  at: number
  pid: number
  hostname: string
  /** `start` or `serve`. */
  role: string
  started_at: number
  /** The gateway's URL, when the process has one. */
  http_url?: string
  /** What this host can do, which placement and the other hosts go by; absent in an earlier version's beat (all). */
  can?: HostAbilities
}

/**
 * What a host is configured to do, told in its heartbeat: hosts of one cluster place each kind only on hosts that can
 * serve it, and refuse what needs them to agree when they do not.
 */
export interface HostAbilities {
  /** A model endpoint is configured: the host can run session turns. */
  model: boolean
  /**
   * The operator keyring, as fingerprints of its keys by key id (a hash of each key, never the key), and the id new
   * secrets are sealed with; absent without one.
   */
  keyring?: { keys: Record<string, string>; sealing: string }
  /** How the host runs its sessions' tools: a sandbox backend's kind, or `remote` (on sandbox hosts). */
  sandbox: string
}

/**
 * A sandbox host (`troupe sandbox`) says it runs with `sandbox.<host id>` in `troupe_hosts` (the actor hosts' bucket:
 * the same max age, no bucket of its own), every beat (msgpack).
 */
export const SANDBOX_HOST_PREFIX = 'sandbox.'
export interface SandboxHostBeat {
  at: number
  pid: number
  hostname: string
  /** Its sandbox backend (`local` or `isolated`). */
  kind: 'local' | 'isolated'
  /** Its sandboxes reach the network only through their egress proxy: limited networking is enforced there. */
  enforces_network: boolean
  /** Its data directory: a session's files are beneath `<data_dir>/sessions/<id>` there. */
  data_dir: string
  started_at: number
  /**
   * The public half of its key for sessions' secrets (X25519, SPKI DER, base64; actors/workdir/sealed-secrets.ts),
   * made at its start. Absent: a host of a version that takes no secrets.
   */
  secrets_key?: string
}

/** A sandbox host's calls: `troupe.sandbox.<host id>.<op>` (actors/workdir/sandbox-host.ts). */
export const SANDBOX_OPS = ['prepare', 'run', 'outputs', 'close', 'remove', 'keep', 'abort'] as const
export type SandboxOp = (typeof SANDBOX_OPS)[number]
const HOST_ID = /^host_[0-9A-Za-z]{10,40}$/
export const isHostId = (s: string) => HOST_ID.test(s)
export function sandboxSubject(host: string, op: SandboxOp): string {
  // A roster key is our own processes' writing, but it still names a subject: checked like any request string.
  if (!isHostId(host)) throw new Error(`not a host id: ${JSON.stringify(host)}`)
  return `troupe.sandbox.${host}.${op}`
}

/** A partition's holder in `troupe_placement` (msgpack). */
export interface PlacementRecord {
  host: string
  /** Wall-clock ms when ownership last changed. */
  at: number
}

/**
 * Lifecycle events for webhooks, as the exact JSON bytes of their thin payload (SPEC "Webhook events"), one message
 * per event on `troupe.outbox.<event type>`, `Nats-Msg-Id` the event's `whe_` id (a retried write is stored once).
 */
export const OUTBOX_STREAM = 'TROUPE_OUTBOX'
export const OUTBOX_PREFIX = 'troupe.outbox'
export const outboxSubject = (eventType: string) => `${OUTBOX_PREFIX}.${eventType}`

/** The one workspace a Troupe server is: the `workspace_id` of every webhook event's payload. */
export const WORKSPACE_ID = 'wrkspc_troupe'

/** Session event history: one stream, a subject per session thread. */
export const EVENTS_STREAM = 'TROUPE_EVENTS'
export const EVENTS_PREFIX = 'troupe.events'
export const eventsSubject = (sessionId: string, thread = 'primary') => `${EVENTS_PREFIX}.${sessionId}.${thread}`
export const eventsWildcard = (sessionId: string) => `${EVENTS_PREFIX}.${sessionId}.>`
/** The thread an events or live subject (`troupe.<events|live>.<sid>.<thread>`) belongs to. */
export const threadOf = (subject: string): string => subject.slice(subject.lastIndexOf('.') + 1)

/**
 * The stream republishes every stored event from `troupe.events.<sid>.<thread>` to `troupe.live.<sid>.<thread>`
 * (with `Nats-Sequence`), so a gateway tails a session with one core subscription and sees only what was
 * stored. Stream-only messages (event_start/event_delta previews, the deletion notice) are core-published to
 * the same live subject without a sequence.
 */
export const LIVE_PREFIX = 'troupe.live'
export const liveSubject = (sessionId: string, thread = 'primary') => `${LIVE_PREFIX}.${sessionId}.${thread}`
export const liveWildcard = (sessionId: string) => `${LIVE_PREFIX}.${sessionId}.>`
