import type { Outbox } from '../kit/outbox.js'
import type { KeyedActors } from '../kit/keyed-actors.js'
import type { RetryPolicy } from '../kit/retry-policy.js'
import type { RecordStore } from '../kit/store.js'
import type { HostContext, SessionTuning } from '../kit/types.js'
import type { SessionActor } from './actor.js'
import type { AgentResolver } from './admission.js'
import type { SessionTails } from './local-tails.js'
import type { Model } from './model.js'
import type { SessionOutputs } from './outputs.js'
import type { EnvironmentRefs } from './references.js'
import type { SessionRecord } from './state.js'
import type { SkillTexts } from './skill-texts.js'
import type { FileReader } from '../file/read.js'
import type { WorkspaceStore } from './workspace-store.js'
import type { SkillBundles } from './skill-mounts.js'

/** A host's session tuning, every setting given (defaults in index.ts). */
export type SessionSettings = SessionTuning

/** What the session actors of a host share. */
export interface ActorDeps {
  ctx: HostContext
  store: RecordStore<SessionRecord>
  /** Undefined when neither a model base URL nor a key is configured: turns end with a session.error. */
  model: Model | undefined
  environments: EnvironmentRefs
  /** Reads file bytes from the object store: a session's resource copies, as they are mounted (mounts.ts). */
  files: FileReader
  /** Reads skill bundles from `troupe_skill_bundles`: a session's skills, as they are unpacked (skill-mounts.ts). */
  bundles: SkillBundles
  /** Reads the agent a new session snapshots. */
  agents: AgentResolver
  settings: SessionSettings
  /** How a failed model request is retried: `modelRetry` with the settings' retries and first pause. */
  modelRetry: RetryPolicy
  /** The kind's actors on this host: told when one leaves memory (deleted) or failed (it is rebuilt). */
  actors: KeyedActors<SessionActor>
  /** This process's SSE tails of the sessions owned here, fed by their event logs. */
  tails: SessionTails
  /** Publishes what sessions write to their outputs folder as Files (outputs.ts). */
  outputs: SessionOutputs
  /** Where workspaces are saved for a move to another host. */
  workspaces: WorkspaceStore
  /** Lifecycle events no history holds (scheduled, deleted), for webhooks. */
  outbox: Outbox
  /** Skill versions' SKILL.md, as a `Skill` launch injects it (skill-texts.ts). */
  skillTexts: SkillTexts
}
