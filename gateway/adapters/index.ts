import type { Listen, TransportName } from '../transport.js'

/**
 * Each transport is imported only when chosen: `node` then loads no native code, so it runs where the uWS binding
 * cannot load.
 */
const LOADERS: Record<TransportName, () => Promise<{ listen: Listen }>> = {
  uws: () => import('./uws/index.js'),
  node: () => import('./node/index.js'),
}

export async function loadTransport(name: TransportName): Promise<Listen> {
  return (await LOADERS[name]()).listen
}
