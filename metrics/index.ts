/**
 * Prometheus metrics (prom-client): the process registry, families with pre-bound children cheap enough for every
 * request, and label helpers that keep values few. Each layer defines its own metrics with these (gateway/metrics.ts,
 * actors/kit/metrics.ts, sandbox/metrics.ts, …); the supervisor turns recording on or off and serves the text.
 */
export {
  CounterChild,
  CounterFamily,
  GaugeChild,
  GaugeFamily,
  type GaugeReading,
  HistogramChild,
  HistogramFamily,
  isRecording,
  ReadGauge,
  SECONDS_FAST,
  SECONDS_SLOW,
  setRecording,
} from './families.js'
export { collectProcessMetrics, METRICS_CONTENT_TYPE, metricsText, registry } from './registry.js'
export { LabelCap, methodLabel, statusLabel } from './labels.js'
