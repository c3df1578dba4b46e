import type { ActorKindDef } from './kit/index.js'
import { agentKind } from './agent/index.js'
import { apiKeyKind } from './apikey/index.js'
import { deploymentKind, deploymentRunKind } from './deployment/index.js'
import { dreamKind } from './dream/index.js'
import { environmentKind } from './environment/index.js'
import { fileKind } from './file/index.js'
import { memoryStoreKind } from './memory/index.js'
import { sessionKind } from './session/index.js'
import { skillKind } from './skill/index.js'
import { vaultKind } from './vault/index.js'
import { webhookKind } from './webhook/index.js'
import { workKind } from './work/index.js'

/** Every actor kind a host runs, started in this order (sessions call agents, environments and vaults; deployments and dreams all of them). */
export const ACTOR_KINDS: readonly ActorKindDef[] = [
  agentKind,
  environmentKind,
  vaultKind,
  sessionKind,
  deploymentKind,
  deploymentRunKind,
  fileKind,
  skillKind,
  webhookKind,
  workKind,
  memoryStoreKind,
  dreamKind,
  apiKeyKind,
]
