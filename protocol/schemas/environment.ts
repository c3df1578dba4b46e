import { type } from 'arktype'
import { Metadata, MetadataPatch, boolParam, limitParam, notArray, pageParam } from './common.js'
import { listOf } from './list.js'
import { lazy } from './lazy.js'

const LABEL = '[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?'
const HOST_RE = new RegExp(`^(\\*\\.)?${LABEL}(\\.${LABEL})*$`, 'i')

/** A bare hostname or `*.` + hostname; the message says which rule a bad entry broke. */
export const AllowedHost = lazy(() =>
  type('string').narrow((h, ctx) => {
    if (h.includes('://')) return ctx.reject({ expected: 'a bare hostname without a URL scheme', actual: JSON.stringify(h) })
    if (h.includes('/')) return ctx.reject({ expected: 'a bare hostname without a path', actual: JSON.stringify(h) })
    if (/:\d*$/.test(h) || h.includes(':')) return ctx.reject({ expected: 'a bare hostname without a port', actual: JSON.stringify(h) })
    if (h.slice(h.startsWith('*.') ? 2 : 0).includes('*')) {
      return ctx.reject({ expected: 'a hostname whose only wildcard is a leading "*."', actual: JSON.stringify(h) })
    }
    if (h.length > 253 || !HOST_RE.test(h)) return ctx.reject({ expected: 'a valid hostname', actual: JSON.stringify(h) })
    return true
  }),
)

export const NetworkingParams = lazy(() =>
  type({ '+': 'reject', type: "'unrestricted'" }).or({
    '+': 'reject',
    type: "'limited'",
    'allowed_hosts?': listOf(AllowedHost, { max: 256 }).or('null'),
    'allow_mcp_servers?': 'boolean | null',
    'allow_package_managers?': 'boolean | null',
  }),
)

const PackageList = lazy(() => type('string[] | null'))
export const PackagesParams = lazy(() =>
  type({
    '+': 'reject',
    'type?': "'packages'",
    'apt?': PackageList,
    'cargo?': PackageList,
    'gem?': PackageList,
    'go?': PackageList,
    'npm?': PackageList,
    'pip?': PackageList,
  }).narrow(notArray),
)

export const Scope = lazy(() => type("'account' | 'organization'"))

export const CloudConfigParams = lazy(() =>
  type({
    '+': 'reject',
    'type?': "'cloud'",
    'networking?': NetworkingParams.or('null'),
    'packages?': PackagesParams.or('null'),
    // Accepted so the message can say why it is wrong for cloud (the spec: rejected for cloud).
    'scope?': 'unknown',
  }).narrow(notArray),
)

export const SelfHostedConfigParams = lazy(() => type({ '+': 'reject', type: "'self_hosted'", 'scope?': Scope.or('null') }))

export const EnvironmentConfigParams = lazy(() => SelfHostedConfigParams.or(CloudConfigParams))

export const EnvironmentCreate = lazy(() =>
  type({
    '+': 'reject',
    name: 'string > 0',
    'description?': 'string | null',
    'metadata?': Metadata,
    'config?': EnvironmentConfigParams.or('null'),
    'scope?': Scope.or('null'),
  }),
)

export const EnvironmentUpdate = lazy(() =>
  type({
    '+': 'reject',
    'name?': type('string > 0').or('null'),
    'description?': 'string | null',
    'metadata?': MetadataPatch.or('null'),
    'config?': EnvironmentConfigParams.or('null'),
    'scope?': Scope.or('null'),
  }).narrow(notArray),
)

export const EnvironmentListQuery = lazy(() =>
  type({
    'include_archived?': boolParam,
    'limit?': limitParam(1000),
    'page?': pageParam,
  }),
)

export type NetworkingInput = typeof NetworkingParams.infer
export type PackagesInput = typeof PackagesParams.infer
export type EnvironmentCreateInput = typeof EnvironmentCreate.infer
export type EnvironmentUpdateInput = typeof EnvironmentUpdate.infer
export type EnvironmentListInput = typeof EnvironmentListQuery.infer

// Resource shapes as returned (WIRE.md §5).
export type Networking = { type: 'unrestricted' } | { type: 'limited'; allowed_hosts: string[]; allow_mcp_servers: boolean; allow_package_managers: boolean }
export interface Packages {
  type: 'packages'
  apt: string[]
  cargo: string[]
  gem: string[]
  go: string[]
  npm: string[]
  pip: string[]
}
export type EnvironmentConfig = { type: 'cloud'; networking: Networking; packages: Packages } | { type: 'self_hosted'; scope: 'account' | 'organization' }

export interface Environment {
  id: string
  type: 'environment'
  name: string
  description: string | null
  metadata: Record<string, string>
  config: EnvironmentConfig
  scope?: 'account' | 'organization'
  created_at: string
  updated_at: string
  archived_at: string | null
}
