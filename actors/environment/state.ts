import type { Environment } from '../../protocol/schemas/environment.js'

/** What the bucket holds per environment: the resource and how many sessions reference it. */
export interface StoredEnvironment {
  env: Environment
  /** Sessions that reference this environment; delete is refused while non-zero. */
  refs: number
  /** Fingerprint of the create request, when it carried an Idempotency-Key: its retries must match it. */
  created_by?: string
}

export const envKey = (id: string) => `env.${id}`
export const ENV_PREFIX = 'env.'

/** The wire form: self-hosted environments carry scope both in config (spec) and top level (client). */
export function view(env: Environment): Environment {
  return env.config.type === 'self_hosted' ? { ...env, scope: env.config.scope } : env
}
