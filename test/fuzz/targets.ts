import { PATH_ID_PREFIX, ROUTES } from '../../protocol/routes/index.js'
import type { Rng } from './rng.js'
import type { Victims } from './types.js'

/** A route the fuzzer aims at: one of the route table, or an operational path the gateway answers itself. */
export interface Target {
  method: string
  path: string
  operationId: string
  hasBody: boolean
  hasQuery: boolean
  params: string[]
}

const paramsOf = (path: string) => [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!)

/** Every route of the table and the operational paths. */
export const ALL_TARGETS: readonly Target[] = [
  ...ROUTES.map((r) => ({
    method: r.method,
    path: r.path,
    operationId: r.operationId,
    // An upload's body is multipart (its hostile forms are raw cases, raw-http.ts), not the op's JSON.
    hasBody: !!r.op.body && r.bytes !== 'upload' && r.bytes !== 'skill',
    hasQuery: !!r.op.query,
    params: paramsOf(r.path),
  })),
  ...['/healthz', '/readyz', '/openapi.yaml', '/metrics'].map((p) => ({ method: 'GET', path: p, operationId: p, hasBody: false, hasQuery: false, params: [] })),
]

/** `--routes` (FUZZ_ROUTES): path prefixes, comma-separated; only the routes under one of them are aimed at. */
const ONLY = process.env.FUZZ_ROUTES?.split(',').filter(Boolean)

/** The routes this run aims at: all of them, or those `--routes` names. */
export const TARGETS: readonly Target[] = ONLY ? ALL_TARGETS.filter((t) => ONLY.some((p) => t.path.startsWith(p))) : ALL_TARGETS

export const WITH_BODY = TARGETS.filter((t) => t.hasBody)
export const WITH_PARAMS = TARGETS.filter((t) => t.params.length > 0)
export const GETS = TARGETS.filter((t) => t.method === 'GET')
/** Routes a body can be sent to at all (the gateway reads a body on any method but GET). */
export const NOT_GET = TARGETS.filter((t) => t.method !== 'GET')

const VICTIM_OF: Record<string, keyof Victims> = {
  agent_id: 'agents',
  environment_id: 'environments',
  session_id: 'sessions',
  deployment_id: 'deployments',
  deployment_run_id: 'deployment_runs',
  file_id: 'files',
  resource_id: 'session_resources',
  thread_id: 'session_threads',
  vault_id: 'vaults',
  credential_id: 'credentials',
  webhook_id: 'webhooks',
  skill_id: 'skills',
  work_id: 'work',
  memory_store_id: 'memory_stores',
  memory_id: 'memories',
  memory_version_id: 'memory_versions',
  dream_id: 'dreams',
  api_key_id: 'api_keys',
}

/**
 * Path parameters whose victims go in pairs (a credential lives in one vault, a thread in one session, a memory and a
 * version in one store): the first
 * named picks the pair.
 */
const PAIRED: Record<string, keyof Victims> = {
  vault_id: 'vaults',
  credential_id: 'credentials',
  session_id: 'sessions',
  thread_id: 'session_threads',
  memory_store_id: 'memory_stores',
  memory_id: 'memories',
  memory_version_id: 'memory_versions',
}

/**
 * Live ids for the parameters of one path: each from its victims, but a credential and its vault from the same
 * pair, so that a path naming both names a credential that is there.
 */
export function victimPicker(rng: Rng, v: Victims): (param: string) => string {
  let pair: number | undefined
  let workEnv: number | undefined
  return (param) => {
    // A work item is asked for in its own environment whenever the environment picked holds one.
    if (param === 'environment_id') {
      const env = victimFor(rng, param, v)
      workEnv = v.work_environments.indexOf(env)
      return env
    }
    if (param === 'work_id' && workEnv !== undefined && workEnv >= 0) return v.work[workEnv]!
    const kind = PAIRED[param]
    if (!kind) return victimFor(rng, param, v)
    pair ??= rng.int(v[kind].length)
    return v[kind][pair]!
  }
}

/** A live id for a path parameter, from the victims (never a canary). */
export function victimFor(rng: Rng, param: string, v: Victims): string {
  // Every victim skill has its first version.
  if (param === 'version') return '1'
  const kind = VICTIM_OF[param]
  if (!kind) throw new Error(`no victims for path parameter ${param}`)
  return rng.pick(v[kind])
}

/** Live ids of the kinds other than this parameter's, for "a real id of the wrong kind". */
export function otherKindIds(param: string, v: Victims): string[] {
  return Object.entries(VICTIM_OF)
    .filter(([p]) => p !== param)
    .map(([, kind]) => v[kind][0]!)
}

/** The path with each parameter filled: `fill` may return anything (already encoded as it should be sent). */
export function fillPath(t: Target, fill: (param: string) => string): string {
  return t.path.replace(/\{([^}]+)\}/g, (_, p: string) => fill(p))
}

/** The id prefix a path parameter must carry (`agent`, `env`, `sesn`). */
export function prefixOf(param: string): string {
  return PATH_ID_PREFIX[param]?.prefix ?? 'x'
}
