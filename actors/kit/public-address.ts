import { lookup } from 'node:dns/promises'
import ipaddr from 'ipaddr.js'

/**
 * Public addresses, for what the server itself connects to on a user's behalf (webhook deliveries, MCP servers): a URL
 * a user stores must not reach the host's loopback, its private network or the cloud metadata address.
 */

/**
 * Why `address` may not be reached, or undefined when it is a public unicast address. Everything ipaddr.js
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

/** A host name that resolves to an address that may not be reached (a webhook endpoint is then disabled). */
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
export async function publicAddress(
  hostname: string,
  resolve: Resolver,
  except: AddressExceptions = NO_EXCEPTIONS,
): Promise<{ address: string; family: 4 | 6 }> {
  const addresses = await resolve(hostname)
  if (!addresses.length) throw new Error(`${hostname} resolves to no address`)
  if (!except.hosts.has(hostname.toLowerCase().replace(/\.$/, ''))) {
    for (const a of addresses) {
      const why = refusal(a, except)
      if (why) throw new NonPublicAddress(hostname, a, why)
    }
  }
  const address = addresses[0]!
  return { address, family: ipaddr.parse(address).kind() === 'ipv6' ? 6 : 4 }
}

/**
 * What an operator lets through although it is not public (`TROUPE_MCP_ALLOW_HOSTS`): host names, reached wherever
 * they resolve, and addresses or CIDR ranges, reached whatever name led to them.
 */
export interface AddressExceptions {
  /** Lowercased host names, without a trailing dot. */
  hosts: ReadonlySet<string>
  ranges: ReadonlyArray<[ipaddr.IPv4 | ipaddr.IPv6, number]>
}

export const NO_EXCEPTIONS: AddressExceptions = { hosts: new Set(), ranges: [] }

/** The exceptions as their items, or undefined when there are none (for a start-up line). */
export function listExceptions(e: AddressExceptions): string[] | undefined {
  const items = [...e.hosts, ...e.ranges.map(([net, bits]) => (bits === (net.kind() === 'ipv6' ? 128 : 32) ? net.toString() : `${net.toString()}/${bits}`))]
  return items.length ? items : undefined
}

/** Why `address` may not be reached under `except`, or undefined when it may. */
export function refusal(address: string, except: AddressExceptions = NO_EXCEPTIONS): string | undefined {
  const why = nonPublic(address)
  if (!why || !except.ranges.length) return why
  const ip = ipaddr.process(address)
  return except.ranges.some(([net, bits]) => net.kind() === ip.kind() && ip.match(net, bits)) ? undefined : why
}

/**
 * Comma-separated host names, addresses and CIDR ranges (`mcp.internal,127.0.0.1,10.0.0.0/8,::1`), as
 * `AddressExceptions`; `setting` names the variable in the error a malformed item throws.
 */
export function parseAddressExceptions(text: string | undefined, setting: string): AddressExceptions {
  const hosts = new Set<string>()
  const ranges: Array<[ipaddr.IPv4 | ipaddr.IPv6, number]> = []
  for (const raw of (text ?? '').split(',')) {
    const item = raw.trim()
    if (!item) continue
    const bare = item.replace(/^\[(.*)\]$/, '$1')
    if (ipaddr.isValid(bare)) {
      const ip = ipaddr.process(bare)
      ranges.push([ip, ip.kind() === 'ipv6' ? 128 : 32])
    } else if (item.includes('/')) {
      try {
        const [net, bits] = ipaddr.parseCIDR(item)
        ranges.push([net.kind() === 'ipv6' && (net as ipaddr.IPv6).isIPv4MappedAddress() ? (net as ipaddr.IPv6).toIPv4Address() : net, bits])
      } catch {
        throw new Error(`${setting}: ${JSON.stringify(item)} is not a host name, an address or a CIDR range`)
      }
    } else if (HOST_NAME.test(item)) hosts.add(item.toLowerCase().replace(/\.$/, ''))
    else throw new Error(`${setting}: ${JSON.stringify(item)} is not a host name, an address or a CIDR range`)
  }
  return { hosts, ranges }
}

const HOST_NAME = /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$/
