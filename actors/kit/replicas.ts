import { JetStreamApiError, type JetStreamManager, type StreamConfig, type StreamInfo } from '@nats-io/jetstream'
import { NotLedYet, retryWhileStarting } from './retry.js'
import type { Logger } from 'pino'

/** Where a stream or bucket is kept: how many servers of the cluster hold a copy. */
export interface Storage {
  jsm: JetStreamManager
  /** Copies of every stream and bucket (at most 5, NATS's limit). */
  replicas: number
  /**
   * Whether an existing stream with more copies than `replicas` is brought down to it: only for a count the operator
   * set. A default (chosen from the servers that answered at start) never lowers, so a start while one server of the
   * cluster is down leaves the streams as they are. Default false.
   */
  lowerReplicas?: boolean
  log: Logger
}

/**
 * Says what to do when NATS refuses a replica count: the usual cause is more replicas than the cluster has
 * servers (or a single server, which keeps one copy only).
 */
export function replicasRefused(what: string, replicas: number, err: unknown): Error {
  const why = err instanceof Error ? err.message : String(err)
  return new Error(
    `${what}: NATS refused ${replicas} replicas (${why}). TROUPE_REPLICAS needs a JetStream cluster of at least that many servers; ` +
      'a single nats-server keeps 1',
    { cause: err },
  )
}

/**
 * Brings an existing stream to the configured replica count (down only when `lowerReplicas`). NATS changes it in
 * place on a cluster (it copies the data to the new peers); where it refuses, the stream keeps working with what
 * it has, and the warning says how to change it by hand.
 */
export async function ensureReplicas(storage: Storage, stream: string, config: StreamConfig): Promise<void> {
  const { jsm, replicas, log } = storage
  const have = config.num_replicas ?? 1
  if (have === replicas) return
  if (have > replicas && !storage.lowerReplicas) {
    log.info(
      { stream, replicas: have, default: replicas },
      `stream ${stream} keeps ${have} replicas: the default (${replicas}) never lowers a count; TROUPE_REPLICAS=${replicas} would`,
    )
    return
  }
  try {
    await retryWhileStarting(`stream ${stream} replicas`, () => jsm.streams.update(stream, { ...config, num_replicas: replicas }), {
      log,
      waitForServers: false,
    })
    await untilLed(storage, `stream ${stream}`, stream)
    log.info({ stream, from: config.num_replicas, to: replicas }, 'stream replicas changed')
  } catch (err) {
    if (!(err instanceof Error && err.cause instanceof JetStreamApiError)) throw err
    log.warn(
      { stream, replicas: config.num_replicas, wanted: replicas, err: err.cause.message },
      `stream ${stream} keeps ${config.num_replicas} replicas: NATS refused ${replicas}; change it with \`nats stream edit ${stream} --replicas ${replicas}\``,
    )
  }
}

/**
 * A stream just created, or whose peer set changed, elects its leader; until then a write to it times out. Waits
 * for one (on a cluster; a single server leads its streams at once) and returns the stream's info. `what` names it in
 * the wait's log line and in errors.
 */
export async function untilLed(storage: Storage, what: string, stream: string): Promise<StreamInfo> {
  return retryWhileStarting(
    `${what} leader`,
    async () => {
      const info = await storage.jsm.streams.info(stream)
      if (info.cluster && !info.cluster.leader) throw new NotLedYet(stream)
      return info
    },
    { log: storage.log },
  )
}
