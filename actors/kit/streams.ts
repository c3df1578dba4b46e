import { type ConsumerConfig, JetStreamApiCodes, JetStreamApiError, type StreamConfig } from '@nats-io/jetstream'
import { ensureReplicas, replicasRefused, type Storage, untilLed } from './replicas.js'
import { retryWhileStarting } from './retry.js'

/**
 * Opens one of the project's streams: created with the configured replicas when missing; an existing one gets the
 * settings of `config` where they differ (an update is a proposal to the cluster's meta leader, so only then) and is
 * brought to the replicas. `what` names it in errors.
 */
export async function ensureStream(storage: Storage, what: string, config: Partial<StreamConfig> & { name: string }): Promise<void> {
  const { jsm, replicas, log } = storage
  // Looked up again on each attempt: a create that lost the race to another host's finds theirs the next time.
  const existing = await retryWhileStarting(
    what,
    async () => {
      const info = await jsm.streams.info(config.name).catch((err) => {
        if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound) return undefined
        throw err
      })
      if (!info) await jsm.streams.add({ ...config, num_replicas: replicas })
      return info
    },
    { log },
  ).catch((e) => {
    throw e.cause instanceof JetStreamApiError && replicas > 1 ? replicasRefused(what, replicas, e.cause) : e
  })
  if (!existing) {
    await untilLed(storage, what, config.name)
    return
  }
  const next = { ...existing.config, ...config }
  if (JSON.stringify(pick(existing.config, config)) !== JSON.stringify(config)) {
    await retryWhileStarting(`${what} update`, () => jsm.streams.update(config.name, next), { log })
  }
  await ensureReplicas(storage, config.name, next)
}

const pick = (from: object, like: object) => Object.fromEntries(Object.keys(like).map((k) => [k, (from as Record<string, unknown>)[k]]))

/**
 * Opens a durable consumer of one of the project's streams: created when missing; one created by an earlier version
 * gets the settings of `config` that may change (ack wait, pending limits) where they differ.
 */
export async function ensureConsumer(storage: Storage, stream: string, config: Partial<ConsumerConfig> & { durable_name: string }): Promise<void> {
  const { jsm, log } = storage
  const what = `consumer ${config.durable_name} of ${stream}`
  const existing = await retryWhileStarting(
    what,
    async () => {
      const info = await jsm.consumers.info(stream, config.durable_name).catch((err) => {
        if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.ConsumerNotFound) return undefined
        throw err
      })
      if (!info) await jsm.consumers.add(stream, config)
      return info
    },
    { log },
  )
  if (!existing) return
  const changing = { ack_wait: config.ack_wait, max_ack_pending: config.max_ack_pending }
  if (JSON.stringify(pick(existing.config, changing)) !== JSON.stringify(changing)) {
    await retryWhileStarting(`${what} update`, () => jsm.consumers.update(stream, config.durable_name, { ...existing.config, ...changing }), { log })
  }
}
