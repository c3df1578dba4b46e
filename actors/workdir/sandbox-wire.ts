import type { ToolResult } from '../../sandbox/index.js'
import type { Prepared, SandboxSpec } from './port.js'

/**
 * The calls between a session actor and the sandbox host that runs its sandbox (`troupe.sandbox.<host id>.<op>`,
 * msgpack). Every call of an activation names its fence: the placement revision under which its host held the
 * session's partition when the actor was made (`HostContext.holding`). A later activation's is higher; a sandbox
 * host that has heard a higher one refuses the lower, so a host that lost the session can start nothing more there.
 */
export interface Fenced {
  session: string
  fence: number
}

/** A call that may run long: the actor keeps it alive (`keep`) and may abort it (`abort`), by its id. */
export interface Tracked extends Fenced {
  call: string
}

export interface PrepareCall extends Tracked {
  spec: SandboxSpec
}
export interface RunCall extends Tracked {
  name: string
  input: unknown
}
export interface KeepCall {
  session: string
  call: string
}

/** What each call answers besides its result: what the actor must say as `session.error`, and whether outputs exist. */
export interface Said {
  /** Messages for `session.error` events (retry_status retrying), in order (port.ts `report`). */
  reports: string[]
  /** The session has an outputs folder on that host (a turn's end passes over it). */
  outputs: boolean
}

export interface PrepareReply extends Said {
  prepared: Prepared
}
export interface RunReply extends Said {
  result: ToolResult
}
export interface KeepReply {
  /** False: the host runs no such call (it restarted, or the call ended). */
  known: boolean
}

/**
 * A refusal: `fenced`, a later activation called (the actor steps down, FenceLost); `not_serving`, the actor stopped
 * asking in time, or the sandbox's own fence said so (the actor steps down, NotServing); `moving`, the actor stopped
 * (the retryable 503); `failed`, anything else (a bug there: the message says what).
 */
export type SandboxError = { error: 'fenced' | 'not_serving' | 'moving' | 'failed'; message: string }
export type SandboxReply<T> = ({ ok: true } & T) | ({ ok: false } & SandboxError)
