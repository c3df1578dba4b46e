import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { CounterFamily, GaugeFamily, METRICS_CONTENT_TYPE, metricsText } from '../metrics/index.js'

export const natsConnected = new GaugeFamily('troupe_nats_connected', '1 while this process is connected to NATS, 0 while it reconnects').child()
export const natsReconnects = new CounterFamily('troupe_nats_reconnects_total', 'Times this process got its NATS connection back after losing it').child()

export interface MetricsServer {
  port: number
  close(): Promise<void>
}

/**
 * `TROUPE_METRICS_PORT`: `GET /metrics` (and HEAD) on a port of its own, for the roles without a gateway (`orchestrate`,
 * `sandbox`) or to keep metrics off the API's port. Anything else is a 404; it reads no request body.
 */
export function serveMetrics(host: string, port: number): Promise<MetricsServer> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0]
    if (path !== '/metrics') return void res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: only GET /metrics is served here\n')
    if (req.method !== 'GET' && req.method !== 'HEAD') return void res.writeHead(405, { allow: 'GET, HEAD' }).end()
    metricsText().then(
      (text) => res.writeHead(200, { 'content-type': METRICS_CONTENT_TYPE }).end(req.method === 'HEAD' ? undefined : text),
      () => res.writeHead(500).end(),
    )
  })
  server.keepAliveTimeout = 10_000
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => {
      server.off('error', reject)
      resolve({
        port: (server.address() as AddressInfo).port,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done())
            server.closeAllConnections()
          }),
      })
    })
  })
}
