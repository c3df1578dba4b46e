import { AgentKind } from './agent.js'
import { ApiKeyKind } from './api-key.js'
import { DeploymentKind, DeploymentRunKind } from './deployment.js'
import { DreamKind } from './dream.js'
import { EnvironmentKind } from './environment.js'
import { SkillKind } from './skill.js'
import { FileKind } from './file.js'
import { MemoryStoreKind } from './memory.js'
import { SessionKind } from './session.js'
import { VaultKind } from './vault.js'
import { WebhookKind } from './webhook.js'
import { WorkKind } from './work.js'

export * from './define.js'
export {
  AgentKind,
  ApiKeyKind,
  DeploymentKind,
  DeploymentRunKind,
  DreamKind,
  EnvironmentKind,
  FileKind,
  MemoryStoreKind,
  SessionKind,
  SkillKind,
  VaultKind,
  WebhookKind,
  WorkKind,
}

/** Every kind's contract, by name. */
export const KINDS = {
  agent: AgentKind,
  environment: EnvironmentKind,
  session: SessionKind,
  deployment: DeploymentKind,
  deployment_run: DeploymentRunKind,
  file: FileKind,
  skill: SkillKind,
  vault: VaultKind,
  webhook: WebhookKind,
  work_queue: WorkKind,
  memory_store: MemoryStoreKind,
  dream: DreamKind,
  api_key: ApiKeyKind,
} as const
