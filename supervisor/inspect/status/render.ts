import { clusterLines } from './cluster-text.js'
import { deploymentLines } from './deployments-text.js'
import type { StatusReport } from './report.js'
import { gapLines } from './text.js'
import { webhookLines } from './webhooks-text.js'
import { workLines } from './work-text.js'
import { metricsLines } from './metrics.js'

/** The report as a person reads it: one section after another, what could not be read said under each. */
export function render(r: StatusReport, now: number): string[] {
  return [
    `NATS ${r.nats.url} (nats-server ${r.nats.server})`,
    '',
    ...clusterLines(r, now),
    ...gapLines(r.gaps),
    '',
    ...deploymentLines(r.deployments),
    '',
    ...webhookLines(r.webhooks, now),
    '',
    ...workLines(r.work_queues, now),
    '',
    ...metricsLines(r.metrics),
  ]
}
