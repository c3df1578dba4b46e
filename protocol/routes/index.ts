import type { Route } from './types.js'
import { adminRoutes } from './admin.js'
import { agentRoutes } from './agents.js'
import { deploymentRoutes } from './deployments.js'
import { dreamRoutes } from './dreams.js'
import { environmentRoutes } from './environments.js'
import { fileRoutes } from './files.js'
import { memoryRoutes } from './memory.js'
import { sessionRoutes } from './sessions.js'
import { skillRoutes } from './skills.js'
import { vaultRoutes } from './vaults.js'
import { webhookRoutes } from './webhooks.js'
import { workRoutes } from './work.js'

export type { Route, Method, BetaGroup } from './types.js'
import { KINDS } from '../ops/index.js'
import type { IdSpec, Op } from '../ops/define.js'

/** Every route the server has; the gateway serves exactly these and /openapi.yaml lists exactly these. */
export const ROUTES: readonly Route[] = [
  ...agentRoutes,
  ...environmentRoutes,
  ...sessionRoutes,
  ...deploymentRoutes,
  ...fileRoutes,
  ...skillRoutes,
  ...vaultRoutes,
  ...webhookRoutes,
  ...workRoutes,
  ...memoryRoutes,
  ...dreamRoutes,
  ...adminRoutes,
]

/**
 * Path parameter names and the id each must carry (from the kinds' contracts: each kind's id, and the second ids its
 * ops declare); anything else is a 404 before any actor is asked. One parameter name means one kind of id everywhere.
 */
export const PATH_ID_PREFIX: Readonly<Record<string, IdSpec>> = pathIds()

function pathIds(): Record<string, IdSpec> {
  const ids: Record<string, IdSpec> = {}
  const add = (spec: IdSpec) => {
    const had = ids[spec.param]
    if (had && had.prefix !== spec.prefix) throw new Error(`path parameter ${spec.param} names two kinds of id (${had.prefix}, ${spec.prefix})`)
    ids[spec.param] = spec
  }
  for (const k of Object.values(KINDS)) {
    add(k.id)
    for (const op of Object.values(k.ops) as Op[]) if (op.sub) add(op.sub)
  }
  return ids
}
