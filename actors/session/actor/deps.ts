import type { KeyedActors, MailboxActor, Outbox, RecordStore, SessionTuning } from '../../kit/index.js'
import type { AgentResolver } from '../admission/index.js'
import type { SessionTails } from '../log/index.js'
import type { EnvironmentRefs } from '../admission/index.js'
import type { SessionRecord } from '../history/index.js'
import type { FileReader } from '../../file/index.js'
import type { Workdirs } from '../../workdir/index.js'
import type { TurnDeps } from '../turn/index.js'
import type { McpClients } from '../../mcp/index.js'
import type { EnvSecretSource } from '../../vault/index.js'

/** A host's session tuning, every setting given (defaults in index.ts). */
export type SessionSettings = SessionTuning

/** What the session actors of a host share: what their turns need (`TurnDeps`: the host, the model, settings, retries, SKILL.md texts) and more. */
export interface ActorDeps extends TurnDeps {
  store: RecordStore<SessionRecord>
  environments: EnvironmentRefs
  /** Reads files' bytes: a File rubric, as an outcome is defined (admission/rubrics.ts). */
  files: FileReader
  /** Reads the agent a new session snapshots. */
  agents: AgentResolver
  /** The kind's actors on this host: told when one leaves memory (deleted) or failed (it is rebuilt). */
  actors: KeyedActors<MailboxActor>
  /** This process's SSE tails of the sessions owned here, fed by their event logs. */
  tails: SessionTails
  /** The sessions' host directories and sandboxes (actors/workdir/): each actor binds its own. */
  workdirs: Workdirs
  /** Lifecycle events no history holds (scheduled, deleted), for webhooks. */
  outbox: Outbox
  /** Makes each session's MCP connections (actors/mcp/). */
  mcp: McpClients
  /** Opens the `environment_variable` credentials of a session's vaults for its sandbox (actors/vault/env-secrets.ts). */
  envSecrets: EnvSecretSource
}
