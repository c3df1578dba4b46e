import type { KeyedActors } from '../kit/keyed-actors.js'
import type { RetryPolicy } from '../kit/retry-policy.js'
import type { RecordStore } from '../kit/store.js'
import type { HostContext } from '../kit/types.js'
import type { SessionActor } from './actor.js'
import type { AgentResolver } from './admission.js'
import type { SessionTails } from './local-tails.js'
import type { Model } from './model.js'
import type { EnvironmentRefs } from './references.js'
import type { SessionRecord } from './state.js'
import type { WorkspaceStore } from './workspace-store.js'

export interface SessionSettings {
  /** Retries of a failed model request before the turn gives up (retries_exhausted). */
  retries: number
  /** First backoff pause; doubles per attempt up to 30 s, unless the provider says when to come back. */
  retryBaseMs: number
  /** An idle session actor leaves memory after this long without work (its state is in KV and the stream). */
  idleMs: number
  /**
   * A turn's record says it runs once the turn has run this long: a quicker turn's idle record would replace it at
   * once (every host receives every record write, for lists). Lists show a running turn this much later; reads of
   * the session itself come from its actor.
   */
  runningRecordMs: number
  /** max_tokens of each model request. */
  maxTokens: number
  /** A session whose shell is live stays in memory this long after its last work (its shell goes when it leaves). */
  shellIdleMs: number
  /** Files, directories and links a workspace may hold and still be saved for a move (workspace-sync.ts). */
  workspaceMaxEntries: number
  /** Bytes of files a workspace may hold and still be saved. */
  workspaceMaxBytes: number
}

/** What the session actors of a host share. */
export interface ActorDeps {
  ctx: HostContext
  store: RecordStore<SessionRecord>
  /** Undefined when neither a model base URL nor a key is configured: turns end with a session.error. */
  model: Model | undefined
  environments: EnvironmentRefs
  /** Reads the agent a new session snapshots. */
  agents: AgentResolver
  settings: SessionSettings
  /** How a failed model request is retried: `modelRetry` with the settings' retries and first pause. */
  modelRetry: RetryPolicy
  /** The kind's actors on this host: told when one leaves memory (deleted) or failed (it is rebuilt). */
  actors: KeyedActors<SessionActor>
  /** This process's SSE tails of the sessions owned here, fed by their event logs. */
  tails: SessionTails
  /** Where workspaces are saved for a move to another host. */
  workspaces: WorkspaceStore
}
