import { isIP } from 'node:net'

/**
 * What a sandbox may reach on the network, always through its egress proxy (proxy.ts). Either way the proxy refuses
 * the host's own services (loopback, this host's interface addresses), link-local and metadata addresses, whatever a
 * name resolves to.
 * - `unrestricted`: any host name or address the server itself could reach, but those.
 * - `limited`: only `hosts`, each a host name (`api.example.com`, case-insensitive) or a `*.` wildcard matching
 *   strict subdomains (`*.example.com` matches `a.example.com`, not `example.com`).
 */
export type EgressPolicy = { type: 'unrestricted' } | { type: 'limited'; hosts: readonly string[] }

/**
 * The canonical public package registries (SPEC environments rule 10): reachable while a sandbox's packages install,
 * and after it when a limited policy says `allow_package_managers`. Custom indexes and Go's direct version-control
 * hosts are not here; a limited policy lists them in `allowed_hosts`.
 */
export const PACKAGE_REGISTRY_HOSTS: readonly string[] = [
  // apt (Debian, Ubuntu)
  'deb.debian.org',
  'security.debian.org',
  'archive.ubuntu.com',
  'security.ubuntu.com',
  'ports.ubuntu.com',
  // cargo
  'crates.io',
  'index.crates.io',
  'static.crates.io',
  // gem
  'rubygems.org',
  'index.rubygems.org',
  // go modules
  'proxy.golang.org',
  'sum.golang.org',
  'index.golang.org',
  'storage.googleapis.com',
  // npm
  'registry.npmjs.org',
  'registry.yarnpkg.com',
  // pip
  'pypi.org',
  'files.pythonhosted.org',
]

/** A host name as compared: lower case, no brackets, no trailing dot. */
export function canonicalHost(host: string): string {
  let h = host.trim().toLowerCase()
  if (h.startsWith('[') && h.endsWith(']')) h = h.slice(1, -1)
  while (h.endsWith('.')) h = h.slice(0, -1)
  return h
}

/** Whether `policy` names `host` (already canonical). Addresses are judged apart (proxy.ts). */
export function policyAllows(policy: EgressPolicy, host: string): boolean {
  if (policy.type === 'unrestricted') return true
  return policy.hosts.some((pattern) => hostMatches(host, canonicalHost(pattern)))
}

function hostMatches(host: string, pattern: string): boolean {
  if (pattern.startsWith('*.')) {
    // A wildcard never matches an address: `*.1.1` must not admit 1.1.1.1.
    return isIP(host) === 0 && host.endsWith(pattern.slice(1))
  }
  return host === pattern
}

/** `a` with `extra` hosts added; an unrestricted policy stays as it is. */
export function widened(a: EgressPolicy, extra: readonly string[]): EgressPolicy {
  if (a.type === 'unrestricted' || extra.length === 0) return a
  return { type: 'limited', hosts: [...new Set([...a.hosts, ...extra])] }
}
