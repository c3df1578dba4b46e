import type { ClusterView } from './cluster.js'
import type { DeploymentsView } from './deployments.js'
import type { Gaps } from './reads.js'
import type { WebhooksView } from './webhooks.js'
import type { WorkQueuesView } from './work.js'
import type { MetricsView } from './metrics.js'

export type { HostView, KindPlacement, SandboxHostView, SessionsView } from './cluster.js'
export type { DeploymentView, DeploymentsView } from './deployments.js'
export type { ScheduleClockView, SchedulerView } from './clock.js'
export type { EndpointView, FanOutView, WebhooksView } from './webhooks.js'
export type { WorkQueueView, WorkQueuesView } from './work.js'
export type { Gaps } from './reads.js'
export type { HostMetrics, MetricFigures, MetricsView } from './metrics.js'

/** What `troupe status --json` prints: every section, each read from what the cluster stores. */
export interface StatusReport extends ClusterView {
  nats: { url: string; server: string }
  /** What the hosts, placement and sessions reads could not finish. */
  gaps: Gaps
  deployments: DeploymentsView
  webhooks: WebhooksView
  work_queues: WorkQueuesView
  /** Each live host's figures from its `/metrics` (the one thing asked of the hosts), and their sums. */
  metrics: MetricsView
  /** How long the reads took (ms); they end by STATUS_BUDGET_MS, cut short if need be. */
  read_ms: number
}
