import uWS from 'uWebSockets.js'
import type { Listen, Listening } from '../../transport.js'
import { UwsExchange } from './exchange.js'
import { assertNativeUws, listenExclusive } from './listen.js'

/**
 * The uWebSockets.js transport (the default, `TROUPE_HTTP=uws`): one catch-all route handing every request to the
 * gateway. uWS's own parser answers what it cannot parse (HTTP/1.0, a request line split across TCP segments, bad
 * chunked framing, oversized headers) with its own HTML 400/431/505 before any handler runs: those answers carry no
 * JSON envelope and no request id, and cannot be intercepted (README, "HTTP transports").
 */
export const listen: Listen = async ({ host, port, handler }) => {
  assertNativeUws()
  const app = uWS.App()
  app.any('/*', (res, req) => handler(new UwsExchange(res, req)))
  const socket = await listenExclusive(app, host, port)
  let closed = false
  const listening: Listening = {
    port: uWS.us_socket_local_port(socket),
    close() {
      // Closing a uWS listen socket twice crashes the process.
      if (closed) return
      closed = true
      uWS.us_listen_socket_close(socket)
      app.close?.()
    },
  }
  return listening
}
