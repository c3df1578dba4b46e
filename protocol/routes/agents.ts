import type { Route } from './types.js'

export const agentRoutes: Route[] = []
