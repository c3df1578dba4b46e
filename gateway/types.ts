import type { NatsConnection } from '@nats-io/transport-node'
import type { Logger } from 'pino'
import type { LocalTails, ReadHistory } from '../protocol/event-item.js'
import type { ActorWire } from '../protocol/wire.js'
import type { FileBytes } from '../protocol/files.js'
import type { CallerKey } from '../protocol/schemas/api-key.js'
import type { TransportName } from './transport.js'

/** What the gateway asks of the actors: requests over the actor wire, and a session's stored events for SSE. */
export interface ActorAccess {
  /** The actor wire (actors/kit/wire.ts) on the gateway's NATS connection. */
  wire: ActorWire
  /** Reads a session's stored events for SSE replay and catch-up: the session kind's reader. */
  readHistory: ReadHistory
  /** The session owners of this process feeding SSE tails in-process (none: every tail listens over NATS). */
  localTails?: LocalTails | undefined
  /** File bytes in and out of the object store (uploads and downloads stream through here, not the actor wire). */
  files: FileBytes
  /** Skill bundles (canonical zips) in and out of their object store. */
  skills: FileBytes
  /**
   * The key of work items' sessions tokens (protocol/sessions-token.ts). Absent (a gateway without an actor host beside
   * it): a presented sessions token is refused with a 401, as one that cannot be checked.
   */
  tokenKey?: Uint8Array | undefined
}

export interface GatewayOptions {
  nc: NatsConnection
  log: Logger
  /** Port to listen on; 0 picks a free one. Default 8080. */
  port?: number
  /** Interface to bind. Default 127.0.0.1. */
  host?: string
  /** The HTTP server underneath (gateway/adapters/): `uws` (uWebSockets.js) or `node` (node:http). Default `uws`. */
  transport?: TransportName
  /** Strict mode: compatibility headers are required (see DECISIONS.md). Default false. */
  strict?: boolean
  /** Largest accepted request body in bytes, lowered to fit the NATS server's max_payload. Default 32 MiB. */
  bodyLimit?: number
  /**
   * Bytes of bodies of 64 KiB or more accepted for parsing and not yet parsed (queued, or on a worker thread);
   * a body that would pass it is answered 503 with `retry-after-ms`. Default 256 MiB (gateway/parse-pool.ts).
   */
  parseBudget?: number
  /** Largest file an upload may carry, in bytes; 413 beyond, with nothing stored. Default 500 MiB (`TROUPE_FILE_MAX_MIB`). */
  fileLimit?: number
  /** How long an actor may take to answer before the request gets a 503. Default 15 000 ms. */
  actorTimeoutMs?: number
  /** The actors' side of the gateway's work, wired by the supervisor (the gateway imports only protocol/). */
  actors: ActorAccess
  /** Keepalive comment interval on SSE streams, ms. Default 15 000. */
  sseKeepaliveMs?: number
  /** API keys (gateway/auth.ts), wired by the supervisor. Default none: no route checks keys, and the admin routes answer 401. */
  keys?: KeyChecks
}

/** The API keys as the gateway checks them: from a copy each host keeps, never a NATS round trip per request. */
export interface KeyChecks {
  /** Whether the API routes check keys now (`TROUPE_AUTH`, and whether any key exists). */
  readonly on: boolean
  /** The key `presented` is (revoked and expired ones too), undefined when it is none. */
  lookup(presented: string): CallerKey | undefined
  /** Live hosts whose gateways share each key's limits (each admits 1/N). */
  hosts(): number
  /** Running sessions the key made (its `concurrent_sessions`), as this host's watch of the sessions has them. */
  runningSessions(keyId: string): number
  /** Whether the session is running now (one more message to it starts nothing new). */
  sessionRunning(sessionId: string): boolean
}

/** A request as the gateway has read it off the socket before any async work, and what handling learns for its log line. */
export interface IncomingRequest {
  method: string
  path: string
  query: string
  headers: Record<string, string>
  rid: string
  /** The matched route's pattern (`/v1/sessions/{session_id}`), `unmatched` until one matches: for the log line. */
  route: string
  /** Body bytes read, for the log line. */
  bytesIn: number
  /** The id of the API key that called, when keys are checked: for the log line. */
  key?: string
}
