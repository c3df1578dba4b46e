import type { SessionAgent } from '../../protocol/session.js'
import type { EnvironmentConfig } from '../../protocol/schemas/environment.js'
import { type EgressPolicy, PACKAGE_REGISTRY_HOSTS } from '../../sandbox/index.js'

/**
 * What a session's sandbox may reach (SPEC environments rule 9): unrestricted, or a limited environment's
 * `allowed_hosts`, plus the hosts of the agent's MCP server URLs (the session's current snapshot, so a session update
 * applies from the next sandbox-using turn) when `allow_mcp_servers`, plus the canonical package registries when
 * `allow_package_managers`. Undefined for a self-hosted environment, whose tools run elsewhere.
 */
export function egressPolicy(env: EnvironmentConfig, agent: SessionAgent): EgressPolicy | undefined {
  if (env.type !== 'cloud') return undefined
  const n = env.networking
  if (n.type === 'unrestricted') return { type: 'unrestricted' }
  const hosts = [...n.allowed_hosts]
  if (n.allow_mcp_servers) {
    for (const s of agent.mcp_servers) {
      const host = hostOf(s.url)
      if (host) hosts.push(host)
    }
  }
  if (n.allow_package_managers) hosts.push(...PACKAGE_REGISTRY_HOSTS)
  return { type: 'limited', hosts: [...new Set(hosts)] }
}

function hostOf(url: string): string | undefined {
  try {
    return new URL(url).hostname || undefined
  } catch {
    return undefined
  }
}
