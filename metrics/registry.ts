import { collectDefaultMetrics, Registry } from 'prom-client'

/**
 * This process's metrics: each `troupe` process serves its own (`GET /metrics` on a gateway, or `TROUPE_METRICS_PORT`
 * for the roles without one). Not prom-client's global registry, so that a library registering there adds nothing here.
 */
export const registry = new Registry()

let defaults = false

/**
 * Node's and the process's own metrics (CPU, memory, event loop delay, GC, handles), prom-client's
 * `collectDefaultMetrics`: added once, by the supervisor, and only with metrics on (its event loop and GC observers
 * cost a little all the time).
 */
export function collectProcessMetrics(): void {
  if (defaults) return
  defaults = true
  // The event loop is sampled every 100 ms, not prom-client's 10 ms: a 100 Hz timer doubled an idle server's CPU
  // (`npm run soak`: 0.9 → 1.75 % of a core); a delay worth an alert is far longer than 100 ms.
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 100 })
}

/** The Prometheus text exposition of every metric of this process. */
export const metricsText = (): Promise<string> => registry.metrics()

/** The content type of `metricsText` (Prometheus text format 0.0.4). */
export const METRICS_CONTENT_TYPE = Registry.PROMETHEUS_CONTENT_TYPE
