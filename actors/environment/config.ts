import { fail } from '../../protocol/errors/fail.js'
import type { EnvironmentConfig, Networking, NetworkingInput, Packages, PackagesInput } from '../../protocol/schemas/environment.js'

type ConfigInput = { type?: 'cloud' | 'self_hosted'; networking?: NetworkingInput | null; packages?: PackagesInput | null; scope?: unknown } | null | undefined
type Scope = 'account' | 'organization'

const LISTS = ['apt', 'cargo', 'gem', 'go', 'npm', 'pip'] as const

export const emptyPackages = (): Packages => ({ type: 'packages', apt: [], cargo: [], gem: [], go: [], npm: [], pip: [] })

/** Limited networking: omitted fields keep `base`'s values (update) or the defaults (create). */
function networkingFrom(input: NetworkingInput | null | undefined, base: Networking): Networking {
  if (input === undefined) return base
  if (input === null || input.type === 'unrestricted') return { type: 'unrestricted' }
  const prev = base.type === 'limited' ? base : { allowed_hosts: [], allow_mcp_servers: false, allow_package_managers: false }
  return {
    type: 'limited',
    allowed_hosts: input.allowed_hosts === undefined ? prev.allowed_hosts : (input.allowed_hosts ?? []),
    allow_mcp_servers: input.allow_mcp_servers === undefined ? prev.allow_mcp_servers : (input.allow_mcp_servers ?? false),
    allow_package_managers: input.allow_package_managers === undefined ? prev.allow_package_managers : (input.allow_package_managers ?? false),
  }
}

/** Package lists: a given list replaces, null clears, an omitted list keeps. */
function packagesFrom(input: PackagesInput | null | undefined, base: Packages): Packages {
  if (input === undefined) return base
  if (input === null) return emptyPackages()
  const next = { ...base }
  for (const k of LISTS) if (input[k] !== undefined) next[k] = input[k] ?? []
  return next
}

/** Where the spec (config.scope) and the client (top-level scope) disagree, accept both; they must agree. */
function pickScope(inConfig: unknown, topLevel: Scope | null | undefined): Scope | null | undefined {
  const c = inConfig as Scope | null | undefined
  if (c != null && topLevel != null && c !== topLevel) {
    throw fail('invalid_request', `scope: config.scope (${c}) and scope (${topLevel}) disagree`)
  }
  return c ?? topLevel
}

/**
 * The effective config after a create (base undefined) or an update. Cloud configs never carry a scope;
 * self-hosted ones always do (default organization); self-hosted → cloud clears it.
 */
export function resolveConfig(input: ConfigInput, scopeTop: Scope | null | undefined, base: EnvironmentConfig | undefined): EnvironmentConfig {
  // A config without type is cloud on create, and keeps the stored type on update.
  const type = input?.type ?? base?.type ?? 'cloud'
  const scope = pickScope(input?.scope, scopeTop)
  if (type === 'cloud') {
    if (scope != null) throw fail('invalid_request', 'scope is accepted only for self_hosted environments (config.type is cloud)')
    const prev = base?.type === 'cloud' ? base : { networking: { type: 'unrestricted' } as Networking, packages: emptyPackages() }
    return {
      type: 'cloud',
      networking: networkingFrom(input?.networking, prev.networking),
      packages: packagesFrom(input?.packages, prev.packages),
    }
  }
  const prevScope = base?.type === 'self_hosted' ? base.scope : 'organization'
  return { type: 'self_hosted', scope: scope ?? prevScope }
}
