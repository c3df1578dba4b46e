import { ConnectionError, errors, NoRespondersError, PermissionViolationError, RequestError, TimeoutError } from '@nats-io/nats-core'
import { JetStreamApiCodes, JetStreamApiError, JetStreamStatusError, jserrors } from '@nats-io/jetstream/internal'
import type { ApiError } from '../../protocol/errors/api-error.js'
import { fail } from '../../protocol/errors/fail.js'

/**
 * JetStream API error codes (nats-server's `errors.json`, `err_code`) that describe the cluster's state at the
 * moment, not the request: the same call succeeds once a leader is elected or the servers are back. The client's
 * `JetStreamApiCodes` names only a few codes, so the others are named here after the server's identifiers.
 */
export const TransientApiCodes = {
  /** JSClusterIncompleteErr (503, "incomplete results"): a peer did not answer in time (a list or an info). */
  ClusterIncomplete: 10004,
  /** JSClusterNotAvailErr (503, "JetStream system temporarily unavailable"): no meta leader (quorum lost, an election). */
  ClusterNotAvailable: 10008,
  /** JSClusterNotLeaderErr (500, "JetStream cluster can not handle request"): the server asked just lost its leadership. */
  ClusterNotLeader: 10009,
  /**
   * JSNotEnabledForAccountErr (503): a server answers it while it is still loading JetStream after a (re)start;
   * nats.js throws it as `JetStreamNotEnabled`. An account really without JetStream fails start-up at the deadline.
   */
  NotEnabledForAccount: JetStreamApiCodes.JetStreamNotEnabledForAccount,
  /** JSRaftGeneralErrF ("raft: …"): a proposal a raft group could not take (no leader, no quorum) while it re-forms. */
  RaftGeneral: 10041,
  /** JSNotEnabledErr (503, "JetStream not enabled"): a server starting up, or shutting JetStream down. */
  NotEnabled: 10076,
  /** JSStreamOfflineErr (500, "stream is offline"): none of the stream's replicas can answer. */
  StreamOffline: 10118,
  /** JSConsumerOfflineErr (500, "consumer is offline"): the same for a consumer. */
  ConsumerOffline: 10119,
  /**
   * JSStreamExpectedLastSeqPerSubjectNotReady (503): a new stream leader cannot check a compare-and-set yet. The
   * write was not applied, and it is no conflict: the record did not move on.
   */
  ExpectedLastSeqNotReady: 10163,
} as const

const TRANSIENT_CODES = new Set<number>(Object.values(TransientApiCodes))

/** A cause chain deeper than this is not worth following (and a cycle must end). */
const MAX_CAUSES = 8

/**
 * True when `err` is NATS or JetStream being unavailable for a moment (quorum lost, a leader election, a node
 * restarting, the connection reconnecting): the call may be repeated, and a client may be told to retry. False for
 * everything else, including our own bugs and JetStream refusing the request itself (a CAS conflict, a bad config).
 * Errors our code wrapped (`new Error(…, { cause })`) are judged by what they wrap.
 */
export function isTransientNatsError(err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < MAX_CAUSES; e = e.cause, depth++) {
    const verdict = judge(e)
    if (verdict !== undefined) return verdict
  }
  return false
}

/** One link of a cause chain: true or false when this error decides, undefined to look at its cause. */
function judge(e: Error): boolean | undefined {
  // The request did not get an answer in time: an unreachable leader, a server stopped mid-request, or a request
  // sent while disconnected and not answered before the client reconnected.
  if (e instanceof TimeoutError) return true
  // Nobody was subscribed to the subject: a stream without a leader (only the leader takes writes), or JetStream
  // not (yet) running on the server we are connected to.
  if (e instanceof NoRespondersError) return true
  if (e instanceof RequestError) {
    // A request refused by the server's permissions will be refused again: that is configuration, not a fault.
    if (e.cause instanceof PermissionViolationError) return false
    // Otherwise a RequestError is about delivery: no responders or a timeout (its cause, accepted above), or the
    // connection dropped while the request waited ("connection disconnected", "connection closed").
    return e.cause === undefined ? true : undefined
  }
  // nats.js turns "no responders" on the JetStream API (and JetStream not enabled for the account) into this.
  if (e instanceof jserrors.JetStreamNotEnabled) return true
  // Our connection is closing or draining (this process is stopping, or NATS dropped us): another host can serve.
  if (e instanceof errors.ClosedConnectionError || e instanceof errors.DrainingConnectionError) return true
  // The connection to the server failed (refused, reset); the client is reconnecting.
  if (e instanceof ConnectionError) return true
  // A JetStream API answer: only the codes about the cluster's state are transient; a 4xx about the request is not.
  if (e instanceof JetStreamApiError) return TRANSIENT_CODES.has(e.code)
  // A status answer (direct get, consumers): 503 is no responders behind the server (no stream leader).
  if (e instanceof JetStreamStatusError) return e.code === 503
  return undefined
}

/**
 * True when a request's answer never came: a write may have been stored all the same (the ack was lost, or a leader
 * that lost its quorum commits it once the cluster re-forms), so repeating it blindly may store it twice. No
 * responders, a closed connection and JetStream API errors say the write was not applied. Transient either way.
 */
export function isOutcomeUnknown(err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < MAX_CAUSES; e = e.cause, depth++) {
    if (e instanceof TimeoutError) return true
    // The connection dropped while the request waited for its answer: it may have been delivered.
    if (e instanceof RequestError && e.cause === undefined) return true
  }
  return false
}

/**
 * The reply for an error an actor did not turn into an ApiError itself: a retryable 503 when the store was
 * unavailable for a moment, undefined when it is something else (a bug, which stays a 500).
 */
export function storeUnavailable(err: unknown): ApiError | undefined {
  if (!isTransientNatsError(err)) return undefined
  return fail('store_unavailable')
}

/**
 * True when a compare-and-set write lost the race: the key moved on (update, delete) or already exists (create).
 * nats-server answers a wrong `Nats-Expected-Last-Subject-Sequence` with JSStreamWrongLastSequenceErrF (10071,
 * "wrong last sequence: N"); newer servers may answer JSStreamWrongLastSequenceConstantErr (10164), which the client
 * calls `StreamWrongLastSequenceUnknown`. `kv.create` of an existing key rejects with that same JetStreamApiError
 * (it re-reads the key first, to overwrite a deleted one), so no message needs matching.
 */
export function isCasConflict(err: unknown): boolean {
  return (
    err instanceof JetStreamApiError &&
    (err.code === JetStreamApiCodes.StreamWrongLastSequence || err.code === JetStreamApiCodes.StreamWrongLastSequenceUnknown)
  )
}
