import type { Route } from './types.js'
import { agentRoutes } from './agents.js'
import { environmentRoutes } from './environments.js'
import { sessionRoutes } from './sessions.js'

export type { Route, Method, BetaGroup } from './types.js'
export { PATH_ID_PREFIX } from './types.js'

/** Every route the server has; the gateway serves exactly these and /openapi.yaml lists exactly these. */
export const ROUTES: readonly Route[] = [...agentRoutes, ...environmentRoutes, ...sessionRoutes]
