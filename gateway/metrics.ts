import { CounterFamily, HistogramFamily, methodLabel, ReadGauge, SECONDS_FAST, statusLabel } from '../metrics/index.js'

const requests = new CounterFamily('troupe_http_requests_total', 'HTTP requests answered, by method, route pattern and status code', [
  'method',
  'route',
  'status',
])

const duration = new HistogramFamily(
  'troupe_http_request_duration_seconds',
  'Time from a request arriving to its response being complete (an SSE stream: to its end), by method, route pattern and status class',
  ['method', 'route', 'status_class'],
  SECONDS_FAST,
)

/** Session event streams (SSE) open on this process's gateways, those still opening included. */
export const sseStreamsOpen = new ReadGauge('troupe_sse_streams_open', 'Session event streams (SSE) open on this gateway')

const CLASSES = ['1xx', '2xx', '3xx', '4xx', '5xx']

/**
 * Counts a request once its response is complete. `route` is the route table's pattern (`/v1/sessions/{session_id}`)
 * or `unmatched`, never the path: its values are as few as the routes.
 */
export function countRequest(method: string, route: string, status: number, seconds: number): void {
  const m = methodLabel(method)
  const s = statusLabel(status)
  requests.child(m, route, s).inc()
  duration.child(m, route, CLASSES[Math.floor(status / 100) - 1] ?? 'other').observe(seconds)
}
