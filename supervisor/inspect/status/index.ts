import { setMaxListeners } from 'node:events'
import { jetstream, jetstreamManager } from '@nats-io/jetstream'
import { needJetStream, parse, type Io } from '../io.js'
import { readCluster } from './cluster.js'
import { readDeployments } from './deployments.js'
import { Reads } from './reads.js'
import type { StatusReport } from './report.js'
import { render } from './render.js'
import { readWebhooks } from './webhooks.js'
import { readWorkQueues } from './work.js'
import { readMetrics } from './metrics.js'

export type * from './report.js'

export const STATUS_USAGE = {
  synopsis: 'status [--json]',
  summary: "hosts, partitions, sessions, deployments, webhook endpoints and work queues, from what the cluster stores, and the hosts' metrics",
}

/**
 * The reads of every section end by then, what they got so far shown and the rest said to be cut, so that the command
 * answers within about 3 s (node's start and connecting included) however much the buckets hold.
 */
export const STATUS_BUDGET_MS = 2000
/** A single JetStream API request (a stream's info, a consumer made) waits no longer than this. */
const API_TIMEOUT_MS = 1500

/** `troupe status [--json]`: read from the buckets and streams; of the hosts, only their `/metrics`, within the budget. */
export async function status(args: string[], io: Io): Promise<void> {
  const { values } = parse(args, { json: { type: 'boolean' } })
  const conn = await io.connect()
  needJetStream(conn)
  const js = jetstream(conn.nc, { timeout: API_TIMEOUT_MS })
  const jsm = await jetstreamManager(conn.nc, { timeout: API_TIMEOUT_MS, checkAPI: false })
  const t0 = Date.now()
  // Not AbortSignal.any over AbortSignal.timeout: node 20 holds the sources of `any` weakly, and a timeout signal that a
  // collection takes never fires (measured: 3.5 s of reads with 50,000 sessions, nothing cut).
  const time = new AbortController()
  const budget = time.signal
  const timer = setTimeout(() => time.abort(), STATUS_BUDGET_MS)
  const interrupted = () => time.abort()
  io.signal.addEventListener('abort', interrupted, { once: true })
  // Every read in flight listens to it (dozens at once, one per batch of a stream read): not a leak.
  setMaxListeners(0, budget)
  const reads = () => new Reads(js, jsm, budget)
  const cluster = reads()
  const viewRead = readCluster(cluster, t0)
  const [view, deployments, webhooks, work_queues, metrics] = await Promise.all([
    viewRead,
    readDeployments(reads(), t0, process.env),
    readWebhooks(reads(), t0),
    readWorkQueues(reads(), t0),
    viewRead.then((v) => readMetrics(v.hosts, budget)),
  ])
  clearTimeout(timer)
  io.signal.removeEventListener('abort', interrupted)
  const report: StatusReport = {
    nats: { url: conn.url, server: conn.nc.info?.version ?? '?' },
    ...view,
    gaps: cluster.gaps,
    deployments,
    webhooks,
    work_queues,
    metrics,
    read_ms: Date.now() - t0,
  }
  if (values.json) io.out(JSON.stringify(report))
  else for (const line of render(report, t0)) io.out(line)
}
