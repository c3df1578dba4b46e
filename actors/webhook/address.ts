import { lookup } from 'node:dns/promises'
import ipaddr from 'ipaddr.js'

/**
 * Why `address` may not receive a webhook, or undefined when it is a public unicast address. Everything ipaddr.js
 * classes other than `unicast` is refused (private, loopback, link-local with the cloud metadata address,
 * carrier-grade NAT, multicast, broadcast, unspecified, reserved and documentation ranges, IPv6 unique-local,
 * IPv4-mapped, NAT64 (rfc6052), 6to4, Teredo, discard), and an IPv6 address outside global unicast (2000::/3).
 */
export function nonPublic(address: string): string | undefined {
  let ip: ipaddr.IPv4 | ipaddr.IPv6
  try {
    ip = ipaddr.parse(address)
  } catch {
    return 'not an IP address'
  }
  const range = ip.range()
  if (range !== 'unicast') return range
  if (ip.kind() === 'ipv6' && !(ip as ipaddr.IPv6).match(GLOBAL_UNICAST)) return 'outside global unicast'
  return undefined
}

const GLOBAL_UNICAST = ipaddr.parseCIDR('2000::/3') as [ipaddr.IPv6, number]

/** Every address a host name resolves to now (`dns.lookup`, all families). Injectable for tests. */
export type Resolver = (hostname: string) => Promise<string[]>

export const systemResolver: Resolver = async (hostname) => (await lookup(hostname, { all: true, verbatim: true })).map((a) => a.address)

/** A host name that resolves to an address no webhook may reach: the endpoint is disabled. */
export class NonPublicAddress extends Error {
  constructor(
    readonly hostname: string,
    readonly address: string,
    readonly why: string,
  ) {
    super(`${hostname} resolves to ${address} (${why}), not a public address`)
  }
}

/**
 * The address to connect to for `hostname`: resolved now (at connect time, so a record changed since the endpoint
 * was stored is seen), every address checked (one non-public address refuses the name: a rebinding answer may hand
 * out several), the first returned, and the connection made to exactly it.
 */
export async function publicAddress(hostname: string, resolve: Resolver): Promise<{ address: string; family: 4 | 6 }> {
  const addresses = await resolve(hostname)
  if (!addresses.length) throw new Error(`${hostname} resolves to no address`)
  for (const a of addresses) {
    const why = nonPublic(a)
    if (why) throw new NonPublicAddress(hostname, a, why)
  }
  const address = addresses[0]!
  return { address, family: ipaddr.parse(address).kind() === 'ipv6' ? 6 : 4 }
}
