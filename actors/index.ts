import type { ActorKindDef } from './kit/types.js'
import { agentKind } from './agent/index.js'
import { environmentKind } from './environment/index.js'
import { sessionKind } from './session/index.js'

/** Every actor kind a host runs, started in this order (sessions call agents and environments). */
export const ACTOR_KINDS: readonly ActorKindDef[] = [agentKind, environmentKind, sessionKind]
