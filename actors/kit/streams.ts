import { JetStreamApiCodes, JetStreamApiError, type StreamConfig, type StreamInfo } from '@nats-io/jetstream'
import { ensureReplicas, replicasRefused, type Storage } from './replicas.js'

/**
 * Opens one of the project's streams: created with the configured replicas when missing; an existing one gets the
 * settings of `config` where they differ (an update is a proposal to the cluster's meta leader, so only then) and is
 * brought to the replicas. `what` names it in errors.
 */
export async function ensureStream(storage: Storage, what: string, config: Partial<StreamConfig> & { name: string }): Promise<void> {
  const { jsm, replicas } = storage
  let existing: StreamInfo
  try {
    existing = await jsm.streams.info(config.name)
  } catch (err) {
    if (!(err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound)) throw err
    await jsm.streams.add({ ...config, num_replicas: replicas }).catch((e) => {
      throw e instanceof JetStreamApiError && replicas > 1 ? replicasRefused(what, replicas, e) : e
    })
    return
  }
  const next = { ...existing.config, ...config }
  if (JSON.stringify(pick(existing.config, config)) !== JSON.stringify(config)) await jsm.streams.update(config.name, next)
  await ensureReplicas(storage, config.name, next)
}

const pick = (from: object, like: object) => Object.fromEntries(Object.keys(like).map((k) => [k, (from as Record<string, unknown>)[k]]))
