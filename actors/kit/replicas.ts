import { JetStreamApiError, type JetStreamManager, type StreamConfig } from '@nats-io/jetstream'
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
    await jsm.streams.update(stream, { ...config, num_replicas: replicas })
    await untilLed(jsm, stream)
    log.info({ stream, from: config.num_replicas, to: replicas }, 'stream replicas changed')
  } catch (err) {
    if (!(err instanceof JetStreamApiError)) throw err
    log.warn(
      { stream, replicas: config.num_replicas, wanted: replicas, err: err.message },
      `stream ${stream} keeps ${config.num_replicas} replicas: NATS refused ${replicas}; change it with \`nats stream edit ${stream} --replicas ${replicas}\``,
    )
  }
}

/** A stream whose peer set changed elects a leader anew; until then every call on it fails. Bounded: 30 s. */
async function untilLed(jsm: JetStreamManager, stream: string): Promise<void> {
  const deadline = Date.now() + 30_000
  for (let delay = 50; ; delay = Math.min(delay * 2, 500)) {
    const info = await jsm.streams.info(stream).catch(() => undefined)
    if (info?.cluster?.leader) return
    if (Date.now() > deadline) throw new Error(`stream ${stream} has no leader 30 s after its replicas changed`)
    await new Promise((r) => setTimeout(r, delay))
  }
}
