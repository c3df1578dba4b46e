/**
 * The kit's public surface: the kinds and the supervisor import the kit through this file only, so what the kit
 * offers is read here and its files can be split or renamed without touching a kind (`npm run deps` holds that).
 * Files inside the kit import each other directly, never this file: that would close an import circle.
 */

// What a host hands a kind, and what a kind hands back.
export type { ActorKindDef, HostContext, HostSettings, KindRuntime, SandboxPlacement, SessionTuning } from './types.js'
export type { Storage } from './replicas.js'

// The op table, its one dispatcher, the typed client and the actor wire.
export { dispatch, type Handlers, implement, type OpInput, type OpTable } from './ops.js'
export { type ActorClient, actorClient } from './client.js'
export { actorWire, type Failovers, type LocalActors, localFirst } from './wire.js'
export { Roster } from './roster.js'

// Actors: keyed actors, the mailbox, fenced records, durable state and the usual listed kind.
export { KeyedActors } from './keyed-actors.js'
export { MailboxActor } from './actor.js'
export { AppendUncertain, asMoving, FenceLost, Mailbox, NotServing, SERVING_WAIT_MS } from './mailbox.js'
export { FencedRecord } from './fenced-record.js'
export { DurableState, durableState, type Work } from './durable-state.js'
export { listedKind } from './listed-kind.js'
export { createdId, keyedCreate } from './create-id.js'

// Records, buckets, streams and object stores.
export { live, type MarksOf, readAtLeader, RecordStore, type Versioned } from './store.js'
export { openBucket } from './buckets.js'
export { ensureConsumer, ensureStream } from './streams.js'
export { jsPublisher } from './js-publish.js'
export { CHUNK_BYTES, openObjectStore, readChunks } from './object-stores.js'
export { type ObjectMeta, ObjectWrites, paddedDigest, type StoredObject, type Superseded } from './object-writes.js'
export { clearSubject, deleteSequences, messagesAtLeader } from './sequence-deletes.js'
export { Projection } from './projection.js'
export { listKeys } from './kv-keys.js'
export { listOf, type Page, pageOf } from './page.js'
export { ensureOutbox, Outbox, webhookEventId } from './outbox.js'

// Retries, compare-and-set loops, timer loops and what NATS errors mean.
export {
  type Clock,
  intervalAfter,
  jitteredAfter,
  modelRetry,
  type RetryPolicy,
  retry,
  retryPolicy,
  WEBHOOK_PAUSE_MS,
  webhookRetry,
  workspaceRetry,
} from './retry-policy.js'
export { retryWhileStarting, type StartupLog } from './retry.js'
export { casLoop, LOST } from './cas.js'
export { every, type Loop } from './loop.js'
export { handle, type HandlerMap } from './handler-map.js'
export { isCasConflict, isOutcomeUnknown, isTransientNatsError, storeUnavailable } from './nats-errors.js'

// The operator keyring.
export { Keyring, loadKeyring, type Sealed } from './keyring.js'

// What the server may connect to on a user's behalf.
export {
  type AddressExceptions,
  listExceptions,
  NO_EXCEPTIONS,
  NonPublicAddress,
  nonPublic,
  parseAddressExceptions,
  publicAddress,
  type Resolver,
  refusal,
  systemResolver,
} from './public-address.js'
export { loadClusterSecret } from './cluster-secret.js'
