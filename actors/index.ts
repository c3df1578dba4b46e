import type { ActorKindDef } from './kit/types.js'
import { agentKind, agentOwnerKind } from './agent/index.js'
import { environmentKind } from './environment/index.js'
import { sessionKind, sessionsKind } from './session/index.js'

/** Every actor kind a host runs. */
export const ACTOR_KINDS: readonly ActorKindDef[] = [agentKind, agentOwnerKind, environmentKind, sessionKind, sessionsKind]
