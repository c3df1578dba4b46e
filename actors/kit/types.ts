import type { NatsConnection } from '@nats-io/transport-node'
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream'
import type { Kvm } from '@nats-io/kv'
import type { Logger } from 'pino'
import type { ActorRequest } from '../../protocol/envelope.js'
import type { SharedKind, PartitionedKind } from '../../protocol/subjects.js'
import type { Storage } from './replicas.js'

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
  serves(kind: PartitionedKind, p: number): boolean
  /** Ask another actor (same wire as the gateway uses). Throws the actor's ApiError. */
  ask<T = unknown>(subject: string, req: Omit<ActorRequest, 'rid'> & { rid?: string }, timeoutMs?: number): Promise<T>
}

export interface HostSettings {
  /** Base URL of the Messages API; unset means model turns end with a clear session.error. */
  modelBaseUrl?: string
  anthropicApiKey?: string
  dataDir: string
  /** Copies of every stream and bucket (`TROUPE_REPLICAS`). Default 1. */
  replicas?: number
  /** Session actor tuning (retries, backoff, passivation); defaults in actors/session/index.ts. */
  session?: Partial<{ retries: number; retryBaseMs: number; idleMs: number; maxTokens: number }>
}

export type Handler = (req: ActorRequest<any, any>) => Promise<unknown>

/** A running kind on one host: its handlers by op, and how to stop it. */
export interface KindRuntime {
  ops: Record<string, Handler>
  close(): Promise<void>
}

/** A kind whose every host serves any id (state guarded by KV compare-and-set). */
export interface SharedActorKind {
  kind: SharedKind
  placement: 'shared'
  start(ctx: HostContext): Promise<KindRuntime>
}

/** A kind with single activation per id: one host owns a partition of ids at a time. */
export interface PartitionedActorKind {
  kind: PartitionedKind
  placement: 'partitioned'
  start(ctx: HostContext): Promise<PartitionedRuntime>
}

export interface PartitionedRuntime {
  /** Handles a request for `id`; only called on the host that owns id's partition. */
  handle(id: string, req: ActorRequest<any, any>): Promise<unknown>
  /** Called when this host gains a partition: resume actors that were mid-work there. */
  acquired(partition: number): Promise<void>
  /** Called before this host gives a partition away (draining); actors on it must stop writing. */
  released(partition: number): Promise<void>
  close(): Promise<void>
}

export type ActorKindDef = SharedActorKind | PartitionedActorKind
