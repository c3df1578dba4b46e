import type { Listen, Listening } from '../../transport.js'
import { NodeExchange } from './exchange.js'
import { createNodeServer, listenOn } from './listen.js'

/**
 * The node:http transport (`TROUPE_HTTP=node`): slower than uWS, but it speaks HTTP/1.0, takes a request line split
 * across TCP segments, and answers malformed requests with the API's JSON envelope (README, "HTTP transports").
 * It loads no native code, so it also runs where the uWS binding does not.
 */
export const listen: Listen = async ({ host, port, handler }) => {
  const server = createNodeServer((req, res) => handler(new NodeExchange(req, res)))
  const bound = await listenOn(server, host, port)
  let closed = false
  const listening: Listening = {
    port: bound,
    close() {
      if (closed) return
      closed = true
      server.close()
      // As uWS does on close: connections go with the listener, streams and kept-alive ones included.
      server.closeAllConnections()
    },
  }
  return listening
}
