import { createRequire } from 'node:module'

/**
 * uWebSockets.js is pinned to a republished upstream build. Refuse to run on anything but its native
 * binding: a JavaScript fallback would be silently several times slower.
 */
export function assertNativeUws(): void {
  const require = createRequire(import.meta.url)
  const entry = require.resolve('uWebSockets.js')
  require('uWebSockets.js')
  const native = Object.keys(require.cache).some((k) => k.endsWith('.node') && k.includes('uws_'))
  if (!native) throw new Error(`uWebSockets.js at ${entry} did not load its native binding; refusing to start`)
}
