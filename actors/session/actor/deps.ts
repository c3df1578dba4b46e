import type { Outbox } from '../../kit/outbox.js'
import type { KeyedActors } from '../../kit/keyed-actors.js'
import type { RetryPolicy } from '../../kit/retry-policy.js'
import type { RecordStore } from '../../kit/store.js'
import type { HostContext, SessionTuning } from '../../kit/types.js'
import type { SessionActor } from './actor.js'
import type { AgentResolver } from '../admission/admission.js'
import type { SessionTails } from '../log/local-tails.js'
import type { Model } from '../turn/model.js'
import type { EnvironmentRefs } from '../admission/references.js'
import type { SessionRecord } from '../history/state.js'
import type { SkillTexts } from '../turn/skill-texts.js'
import type { FileReader } from '../../file/index.js'
import type { Workdirs } from '../../workdir/index.js'

/** A host's session tuning, every setting given (defaults in index.ts). */
export type SessionSettings = SessionTuning

/** What the session actors of a host share. */
export interface ActorDeps {
  ctx: HostContext
  store: RecordStore<SessionRecord>
  /** Undefined when neither a model base URL nor a key is configured: turns end with a session.error. */
  model: Model | undefined
  environments: EnvironmentRefs
  /** Reads files' bytes: a File rubric, as an outcome is defined (outcomes.ts). */
  files: FileReader
  /** Reads the agent a new session snapshots. */
  agents: AgentResolver
  settings: SessionSettings
  /** How a failed model request is retried: `modelRetry` with the settings' retries and first pause. */
  modelRetry: RetryPolicy
  /** The kind's actors on this host: told when one leaves memory (deleted) or failed (it is rebuilt). */
  actors: KeyedActors<SessionActor>
  /** This process's SSE tails of the sessions owned here, fed by their event logs. */
  tails: SessionTails
  /** The sessions' host directories and sandboxes (actors/workdir/): each actor binds its own. */
  workdirs: Workdirs
  /** Lifecycle events no history holds (scheduled, deleted), for webhooks. */
  outbox: Outbox
  /** Skill versions' SKILL.md, as a `Skill` launch injects it (skill-texts.ts). */
  skillTexts: SkillTexts
}
