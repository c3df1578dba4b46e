import type { Route } from './types.js'
import { agentRoutes } from './agents.js'
import { deploymentRoutes } from './deployments.js'
import { environmentRoutes } from './environments.js'
import { fileRoutes } from './files.js'
import { sessionRoutes } from './sessions.js'

export type { Route, Method, BetaGroup } from './types.js'
import { KINDS } from '../ops/index.js'
import type { IdSpec } from '../ops/define.js'

/** Every route the server has; the gateway serves exactly these and /openapi.yaml lists exactly these. */
export const ROUTES: readonly Route[] = [...agentRoutes, ...environmentRoutes, ...sessionRoutes, ...deploymentRoutes, ...fileRoutes]

/** Path parameter names and the id each must carry (from the kinds' contracts); anything else is a 404 before any actor is asked. */
export const PATH_ID_PREFIX: Readonly<Record<string, IdSpec>> = Object.fromEntries(Object.values(KINDS).map((k) => [k.id.param, k.id]))
