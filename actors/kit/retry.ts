import { JetStreamApiError } from '@nats-io/jetstream'
import { jserrors } from '@nats-io/jetstream/internal'
import { isTransientNatsError } from './nats-errors.js'
import { retry, startupRetry } from './retry-policy.js'

/** Where start-up says what it waits for. */
export interface StartupLog {
  warn(obj: object, msg: string): void
}

export interface StartupRetryOptions {
  /** Says what start-up waits for, after WAIT_LOG_AFTER_MS and then every WAIT_LOG_EVERY_MS. Default: nothing said. */
  log?: StartupLog
  /** Give up after this many ms. Default none: a cluster that is forming, or lost a node, is waited out. */
  timeoutMs?: number
  /**
   * Whether "insufficient resources" (fewer servers than the replicas asked) is waited out, as servers that have not
   * joined yet; false fails at once, for a change that may stay as it is. Default true.
   */
  waitForServers?: boolean
}

/** A stream without a leader yet (just created, or its peers changed): thrown to wait for one. */
export class NotLedYet extends Error {
  constructor(stream: string) {
    super(`stream ${stream} has no leader yet`)
  }
}

/**
 * A step says it waits once it has waited this long (a stream elects its first leader within a few hundred ms of
 * being created, which is no news), and then again every WAIT_LOG_EVERY_MS.
 */
export const WAIT_LOG_AFTER_MS = 1000
export const WAIT_LOG_EVERY_MS = 10_000

/**
 * JetStream API codes that a forming cluster answers for a moment and a settled one does not, so they are worth
 * another attempt at start-up only (at run time they are the request's own fault).
 */
const FORMING_CODES = {
  /** JSInsufficientResourcesErr: fewer peers known to the meta leader than the replicas asked (a server still joining, or one just died). */
  InsufficientResources: 10023,
  /**
   * JSStreamNameExistErr ("stream name already in use with a different configuration"): another host created the same
   * stream a moment before; the next attempt finds it. Only a few times: a real mismatch is a misconfiguration.
   */
  StreamNameInUse: 10058,
  /**
   * JSStreamNotFoundErr for a stream made a moment ago (a bucket opened, then watched): the server answering has not
   * yet heard of it from the meta leader of a cluster that just formed. For STREAM_APPEARS_MS only: a stream that
   * stays missing was deleted, and a caller that expects absence catches it inside its own step.
   */
  StreamNotFound: 10059,
  /**
   * JSClusterNoPeersErrF ("no suitable peers for placement, <reasons>"): one code over several reasons; only "peer
   * offline" (a server of the cluster down or restarting, as when hosts start with the cluster) is waited out, the
   * others (placement tags no server has) are a misconfiguration.
   */
  NoPeers: 10005,
} as const
const NAME_IN_USE_ATTEMPTS = 3
/** How long start-up waits for a stream another step (or host) just made to be known to the server it asks. */
export const STREAM_APPEARS_MS = 30_000

/**
 * JetStream refuses or drops calls while it starts or a cluster forms (right after a server starts or restarts, while
 * a meta leader is elected, a stream's raft group elects its own, or a server joins): no responders, timeouts,
 * "temporarily unavailable", "insufficient resources", a create racing another host's. Those calls are repeated
 * under `startupRetry` (100 ms doubling to 1 s) for as long as it takes, each wait said in `log`; anything else (a
 * misconfiguration: R3 on a single server, a stream of that name with another configuration) fails at once. The error
 * names `what` and keeps NATS's error as its cause.
 */
export async function retryWhileStarting<T>(what: string, fn: () => Promise<T>, opts: StartupRetryOptions = {}): Promise<T> {
  let nameInUse = 0
  let missingSince: number | undefined
  const started = Date.now()
  let saidAt: number | undefined
  try {
    return await retry({ ...startupRetry, deadlineMs: opts.timeoutMs }, fn, {
      retryable: (err) => {
        if (isTransientNatsError(err) || err instanceof NotLedYet) return true
        if (!(err instanceof JetStreamApiError)) return false
        if (err.code === FORMING_CODES.StreamNameInUse) return ++nameInUse < NAME_IN_USE_ATTEMPTS
        if (err.code === FORMING_CODES.StreamNotFound) return Date.now() - (missingSince ??= Date.now()) < STREAM_APPEARS_MS
        if (err.code === FORMING_CODES.NoPeers) return /peer offline/.test(err.message) && opts.waitForServers !== false
        return err.code === FORMING_CODES.InsufficientResources && opts.waitForServers !== false
      },
      onRetry: (err, attempts) => {
        if (!opts.log || Date.now() - started < WAIT_LOG_AFTER_MS) return
        if (saidAt !== undefined && Date.now() - saidAt < WAIT_LOG_EVERY_MS) return
        saidAt = Date.now()
        const why = String((err as Error)?.message ?? err)
        opts.log.warn({ step: what, attempts, err: why }, `start-up waits for JetStream: ${what} (${waitingFor(err, why)})`)
      },
    })
  } catch (err) {
    throw new Error(`${what}: ${String((err as Error)?.message ?? err)}`, { cause: err })
  }
}

const notEnabled = (err: unknown): boolean => {
  for (let e = err, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) if (e instanceof jserrors.JetStreamNotEnabled) return true
  return false
}

/** What a forming cluster's answer means, in the words an operator needs. */
function waitingFor(err: unknown, why: string): string {
  if (err instanceof JetStreamApiError && (err.code === FORMING_CODES.InsufficientResources || err.code === FORMING_CODES.NoPeers)) {
    return `${why}: the servers to hold the replicas are not all in the cluster yet; if they never join, TROUPE_REPLICAS asks for more servers than the cluster has`
  }
  if (notEnabled(err)) {
    return `${why}: a server still loading JetStream; if it lasts, JetStream is off on the server or for this account, a misconfiguration`
  }
  return `${why}: the cluster is electing a leader or a server is (re)starting; retrying`
}
