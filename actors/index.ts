import type { ActorKindDef } from './kit/types.js'
import { agentKind } from './agent/index.js'
import { deploymentKind, deploymentRunKind } from './deployment/index.js'
import { environmentKind } from './environment/index.js'
import { fileKind } from './file/index.js'
import { sessionKind } from './session/index.js'

/** Every actor kind a host runs, started in this order (sessions call agents and environments; deployments all three). */
export const ACTOR_KINDS: readonly ActorKindDef[] = [agentKind, environmentKind, sessionKind, deploymentKind, deploymentRunKind, fileKind]
