import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { cannotListen } from '../../listen-error.js'
import { answerClientError, refuseConnect, type InFlight } from './client-error.js'

/** An idle kept-alive connection is closed after this (uWS's HTTP idle timeout is also 10 s). */
export const KEEP_ALIVE_MS = 10_000
/** The request line and headers must arrive within this (a slow client holds a socket only so long). */
export const HEADERS_TIMEOUT_MS = 20_000
/** The whole request, body included, must arrive within this: node's default, room for 32 MiB on a slow link. */
export const REQUEST_TIMEOUT_MS = 300_000
/** How often node checks the two timeouts above (its default, 30 s, would let a stalled header wait 50 s). */
const TIMEOUT_CHECK_MS = 5_000
/** Request line and headers, at most (node's default; the official client sends well under 1 KiB). */
export const MAX_HEADER_BYTES = 16 * 1024

/** node's HTTP server with the gateway's settings, answering parser errors with the API's envelope. */
export function createNodeServer(handler: (req: IncomingMessage, res: ServerResponse) => void): Server {
  const inFlight: InFlight = new WeakMap()
  const server = createServer(
    {
      keepAliveTimeout: KEEP_ALIVE_MS,
      headersTimeout: HEADERS_TIMEOUT_MS,
      requestTimeout: REQUEST_TIMEOUT_MS,
      connectionsCheckingInterval: TIMEOUT_CHECK_MS,
      maxHeaderSize: MAX_HEADER_BYTES,
      // uWS does not require Host either; node's own 400 for it would carry no envelope.
      requireHostHeader: false,
      noDelay: true,
    },
    (req, res) => {
      inFlight.set(req.socket, { req, res })
      res.once('close', () => {
        if (inFlight.get(req.socket)?.res === res) inFlight.delete(req.socket)
      })
      handler(req, res)
    },
  )
  server.on('clientError', (err, socket) => answerClientError(err, socket, inFlight, MAX_HEADER_BYTES))
  server.on('connect', (_req, socket) => refuseConnect(socket))
  return server
}

/** Binds without sharing the port (node never sets SO_REUSEPORT unless asked); a bind error names the address. */
export function listenOn(server: Server, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const failed = (err: NodeJS.ErrnoException) => reject(cannotListen(host, port, err))
    server.once('error', failed)
    server.listen({ host, port, exclusive: true }, () => {
      server.off('error', failed)
      const address = server.address()
      resolve(typeof address === 'object' && address ? address.port : port)
    })
  })
}
