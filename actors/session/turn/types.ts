import type { EventOf, IdleFields, PayloadOf, ServiceEventType } from '../../../protocol/session-events.js'
import type { ToolResult } from '../../../sandbox/index.js'
import type { HostContext, RetryPolicy, SessionTuning } from '../../kit/index.js'
import type { OpenTool } from '../history/index.js'
import type { Model, Preview } from './model.js'
import type { SkillTexts } from './skill-texts.js'

/*
 * What the turn asks of the rooms above it (the actor, the threads), owned here and implemented there: the turn
 * imports nothing above it.
 */

/** The statuses, whose type names the thread they are of (`Emitter.status`). */
type StatusType = `session.status_${string}` | `session.thread_status_${string}`

/** What a turn emits the same way whichever thread it runs on: every service event but the statuses. */
export type TurnEventType = Exclude<ServiceEventType, StatusType>

/** A status change as `Emitter.status` takes it: idle with why, or running, rescheduled, terminated. */
export type StatusArgs = [status: 'idle', fields: IdleFields] | [status: 'running' | 'rescheduled' | 'terminated']

/** Where a turn's events go: its thread's (the actor's `SessionEvents`, or a child's `ThreadEmitter`). */
export interface Emitter {
  /** A service event of type `T` with its fields: applied to the thread's history now, stored behind every earlier write. */
  emit<T extends TurnEventType>(type: T, fields: PayloadOf<T>, id?: string): EventOf<T>
  /** The thread's status changes: `session.status_*` for the primary, `session.thread_status_*` naming a child. */
  status(...args: StatusArgs): void
  /** A model response's preview, published live (never stored). */
  readonly preview: Preview
}

/** The session record's writes a turn makes (the actor's `RecordWriter`; a child thread's turns write none). */
export interface RecordPort {
  /** The turn has run long enough for the record to say it runs. */
  running(): void
  /** Writes the record that sums up what is stored. */
  persist(): Promise<void>
}

/**
 * A send as its tool use's result, or what it is parked on: the child's events the client must answer, or the
 * budget. `stopped`: the session's turn was interrupted or the actor stopped; the send stays open.
 */
export type SendOutcome = { result: ToolResult } | { parkedOn: string[] | 'budget' } | 'stopped'

/** What a coordinator's primary thread asks of its threads: sends, lists and advice (threads/coordinator.ts). */
export interface Coordinator {
  /** The tools it answers (`coordinatorToolNames`, roster.ts). */
  readonly tools: ReadonlySet<string>
  list(): ToolResult
  /** Runs (or resumes) the child of send `t` until it answers, parks or is stopped. */
  send(t: OpenTool, signal: AbortSignal): Promise<SendOutcome>
  /** The advisor's review of the conversation so far. */
  advise(t: OpenTool, signal: AbortSignal): Promise<SendOutcome>
}

/** What a host's turns need of it (`ActorDeps`, actor/deps.ts, holds more). */
export interface TurnDeps {
  ctx: HostContext
  /** Undefined when neither a model base URL nor a key is configured: turns end with a session.error. */
  model: Model | undefined
  settings: SessionTuning
  /** How a failed model request is retried. */
  modelRetry: RetryPolicy
  /** Skill versions' SKILL.md, as a `Skill` launch injects it. */
  skillTexts: SkillTexts
}
