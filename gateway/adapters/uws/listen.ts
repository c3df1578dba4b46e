import { createRequire } from 'node:module'
import { createServer } from 'node:net'
import uWS from 'uWebSockets.js'
import type { TemplatedApp, us_listen_socket } from 'uWebSockets.js'
import { cannotListen } from '../../listen-error.js'

/**
 * uWebSockets.js is pinned to a republished upstream build (README, "HTTP transports"). Refuse to run on anything
 * but its native binding: a JavaScript fallback would be silently several times slower.
 */
export function assertNativeUws(): void {
  const require = createRequire(import.meta.url)
  const entry = require.resolve('uWebSockets.js')
  require('uWebSockets.js')
  const native = Object.keys(require.cache).some((k) => k.endsWith('.node') && k.includes('uws_'))
  if (!native) throw new Error(`uWebSockets.js at ${entry} did not load its native binding; refusing to start`)
}

type ListenWithOptions = (host: string, port: number, options: number, cb: (s: us_listen_socket | false) => void) => TemplatedApp
/** Exported by the binding at run time; the typings declare it as an enum member that does not exist. */
const EXCLUSIVE_PORT = (uWS as unknown as { LIBUS_LISTEN_EXCLUSIVE_PORT: number }).LIBUS_LISTEN_EXCLUSIVE_PORT

/**
 * Listens without SO_REUSEPORT. uWS shares ports by default, so a second server on the same port would start
 * and the kernel would split connections between the two. The binding takes (host, port, options, cb); its
 * typings only declare options without a host.
 */
export function listenExclusive(app: TemplatedApp, host: string, port: number): Promise<us_listen_socket> {
  return new Promise((resolve, reject) => {
    ;(app.listen as unknown as ListenWithOptions).call(app, host, port, EXCLUSIVE_PORT, (s) => {
      if (s) return resolve(s)
      whyNot(host, port).then(reject)
    })
  })
}

/** uWS only says that listening failed: bind the same address with node to learn why. */
function whyNot(host: string, port: number): Promise<Error> {
  return new Promise((resolve) => {
    const probe = createServer()
    probe.once('error', (err: NodeJS.ErrnoException) => resolve(cannotListen(host, port, err)))
    probe.listen({ host, port, exclusive: true }, () =>
      probe.close(() => resolve(new Error(`cannot listen on ${host}:${port}: the address could not be bound`))),
    )
  })
}
