import { TRANSPORT_NAMES, type TransportName } from '../../gateway/transport.js'

/**
 * The transport tests run over: `TROUPE_HTTP`, as `troupe` reads it (default uws). Tests that start a gateway in
 * their own process pass it along; `troupe` processes started by the helpers read it from the environment they inherit.
 */
export const TRANSPORT: TransportName = (() => {
  const v = process.env.TROUPE_HTTP?.trim() || 'uws'
  if (!(TRANSPORT_NAMES as readonly string[]).includes(v)) throw new Error(`TROUPE_HTTP must be ${TRANSPORT_NAMES.join(' or ')} (was ${JSON.stringify(v)})`)
  return v as TransportName
})()
