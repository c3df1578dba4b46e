import { connect, type NatsConnection } from '@nats-io/transport-node'
import { credentials, parseNatsUrl } from './nats-connect.js'

/** The copies a default gives where at least this many JetStream servers answer: a quorum of 2 outlives any one. */
export const CLUSTER_REPLICAS = 3
/** How long a probe of one other server may take to answer with its INFO. */
const PROBE_TIMEOUT_MS = 2000

export interface ReplicaChoice {
  count: number
  /** Set by `TROUPE_REPLICAS`. A default is never lower than what an existing stream has: see `ensureReplicas`. */
  explicit: boolean
  /** Why this count, as the start-up block says it. */
  why: string
}

/**
 * The copies of every stream and bucket: `TROUPE_REPLICAS` when set, else 3 where at least 3 JetStream servers of
 * the cluster answer, else 1.
 */
export async function chooseReplicas(explicit: number | undefined, nc: NatsConnection, natsUrl: string): Promise<ReplicaChoice> {
  if (explicit !== undefined) return { count: explicit, explicit: true, why: `TROUPE_REPLICAS=${explicit}` }
  const servers = await jetStreamServers(nc, natsUrl)
  const seen = servers > 1 ? `JetStream cluster of ${servers} servers` : 'a single JetStream server'
  return { count: servers >= CLUSTER_REPLICAS ? CLUSTER_REPLICAS : 1, explicit: false, why: `${seen}; TROUPE_REPLICAS unset` }
}

/**
 * How many JetStream servers of the connection's cluster answer now: the one we are connected to, and each other
 * that accepts a connection at a client URL the cluster gossips (`connect_urls`, which lists the servers routed to
 * ours) or that `natsUrl` lists, and says in its INFO that it runs JetStream in the same cluster. Needs no system
 * account and creates nothing; a server that does not advertise its URL and is not in `natsUrl` is not counted.
 */
export async function jetStreamServers(nc: NatsConnection, natsUrl: string): Promise<number> {
  const own = nc.info
  if (!own?.jetstream) return 0
  if (!own.cluster) return 1
  const seeds = parseNatsUrl(natsUrl)
  const scheme = seeds[0]!.url.startsWith('tls:') ? 'tls' : 'nats'
  const urls = new Set([...(own.connect_urls ?? []).map((u) => `${scheme}://${u}`), ...seeds.map((s) => s.url)])
  const found = new Set([own.server_id])
  await Promise.all(
    [...urls].map(async (url) => {
      const peer = await connect({ servers: url, reconnect: false, timeout: PROBE_TIMEOUT_MS, name: 'troupe-probe', ...credentials(seeds[0]!) }).catch(
        () => undefined,
      )
      if (!peer) return
      if (peer.info?.jetstream && peer.info.cluster === own.cluster) found.add(peer.info.server_id)
      await peer.close().catch(() => undefined)
    }),
  )
  return found.size
}
