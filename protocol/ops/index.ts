import { AgentKind } from './agent.js'
import { EnvironmentKind } from './environment.js'
import { SessionKind } from './session.js'

export * from './define.js'
export { AgentKind, EnvironmentKind, SessionKind }

/** Every kind's contract, by name. */
export const KINDS = { agent: AgentKind, environment: EnvironmentKind, session: SessionKind } as const
