import type { SessionAgent } from '../../protocol/session.js'
import type { EnvironmentConfig } from '../../protocol/schemas/environment.js'
import { MEMORY_ROOT, memoryResources, type SessionResource } from '../../protocol/schemas/resource.js'
import { type EgressPolicy, PACKAGE_REGISTRY_HOSTS, type PackageLists } from '../../sandbox/index.js'
import type { SandboxSpec } from './port.js'
import type { SkillMount } from './skills/index.js'

/**
 * What a session's sandbox may reach (SPEC environments rule 9): unrestricted, or a limited environment's
 * `allowed_hosts`, plus the hosts of the agent's MCP server URLs (the session's current snapshot, so a session update
 * applies from the next sandbox-using turn) when `allow_mcp_servers`, plus the canonical package registries when
 * `allow_package_managers`. Undefined for a self-hosted environment, whose tools run elsewhere.
 */
function egressPolicy(env: EnvironmentConfig, agent: SessionAgent): EgressPolicy | undefined {
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

const NO_PACKAGES: PackageLists = { apt: [], cargo: [], gem: [], go: [], npm: [], pip: [] }

/** The package lists a session's sandbox installs before its first tool (SPEC environments rules 10, 11). */
function packagesOf(env: EnvironmentConfig): PackageLists {
  return env.type === 'cloud' ? env.packages : NO_PACKAGES
}

/**
 * What a session's sandbox needs of the session now: made by the actor before each tool from its environment, its
 * current agent, its resources and its skills (each skill's mount fields only: the spec crosses NATS).
 */
export function sandboxSpec(s: { env: EnvironmentConfig; agent: SessionAgent; resources: SessionResource[]; skills: readonly SkillMount[] }): SandboxSpec {
  return {
    network: egressPolicy(s.env, s.agent),
    packages: packagesOf(s.env),
    resources: s.resources,
    memory: memoryResources(s.resources).map((r) => ({
      store: r.memory_store_id,
      slug: r.mount_path.slice(MEMORY_ROOT.length + 1),
      access: r.access,
      name: r.name,
    })),
    skills: s.skills.map((k) => ({ name: k.name, object: k.object, ...(k.dir ? { dir: k.dir } : {}) })),
  }
}
