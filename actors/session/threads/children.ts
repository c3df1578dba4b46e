import { decodeCursor, encodeCursor, isRecordPosition } from '../../../protocol/cursor.js'
import type { EventOf, PayloadOf, ServiceEvent, ServiceEventType } from '../../../protocol/session-events.js'
import type { Page } from '../../../protocol/page.js'
import type { ThreadListInput } from '../../../protocol/schemas/thread.js'
import type { AdvisorEntry } from '../../../protocol/schemas/agent.js'
import type { SessionAgent, SessionThread, ThreadAgent } from '../../../protocol/session.js'
import { emptyUsage, type UsageTotals } from '../billing/index.js'
import { toWireUsage } from '../billing/index.js'
import { History } from '../history/index.js'
import type { SessionRecord } from '../history/index.js'
import type { TurnLoop } from '../turn/index.js'
import type { Emitter, StatusArgs, TurnEventType } from '../turn/index.js'
import type { Member } from '../turn/index.js'

/**
 * The record a child's history is built on: the session's, with the member's definition as its agent and nothing
 * spent yet (a child's usage is its own; the session sums its threads'). Never stored: a child's state is its events.
 */
export function childRecord(rec: SessionRecord, member: ThreadAgent, createdAt: string): SessionRecord {
  const agent: SessionAgent = { ...member, multiagent: null }
  return {
    ...rec,
    session: { ...rec.session, agent, status: 'idle', created_at: createdAt, updated_at: createdAt, archived_at: null },
    totals: emptyUsage(),
    running_since: null,
    // `self` runs the coordinator's skills; another member its own, beneath /workspace/skills/.agents/<its id>/.
    skills: rec.skills?.filter((s) => s.member === (member.id === rec.session.agent.id ? undefined : member.id)),
  }
}

/** A child thread's history, ready for its events (a replay's, or a new child's). */
export const childHistory = (rec: SessionRecord, id: string, member: ThreadAgent, createdAt: string): History =>
  new History(childRecord(rec, member, createdAt), id)

/**
 * Events of a child the session's own list and stream carry too (with `session_thread_id`): its statuses (`status`),
 * and tool uses the client must answer.
 */
const crossPosted = (ev: ServiceEvent) =>
  ev.type === 'agent.custom_tool_use' || ((ev.type === 'agent.tool_use' || ev.type === 'agent.mcp_tool_use') && ev.evaluated_permission === 'ask')

/**
 * A child's events as its turn loop emits them: statuses become `session.thread_status_*` naming the thread, and what
 * the client must see is copied to the primary's subject.
 */
export class ThreadEmitter implements Emitter {
  constructor(
    private readonly own: OwnEvents,
    private readonly primary: CrossPoster,
    private readonly thread: string,
    private readonly name: string,
  ) {}

  emit<T extends TurnEventType>(type: T, fields: PayloadOf<T>, id?: string): EventOf<T> {
    const ev = this.own.emit(type, fields, id)
    if (crossPosted(ev)) this.primary.crossPost(ev, this.thread)
    return ev
  }

  status(...[status, idle]: StatusArgs): void {
    const thread = { session_thread_id: this.thread, agent_name: this.name }
    const ev =
      status === 'idle' ? this.own.emit('session.thread_status_idle', { ...thread, ...idle }) : this.own.emit(`session.thread_status_${status}`, thread)
    this.primary.crossPost(ev, this.thread)
  }

  readonly preview: Emitter['preview'] = (type, payload, of) => this.own.preview(type, payload, of)
}

/** A child's own writes, on its subject (the actor's `SessionEvents` for the child): its statuses named as a child's. */
export interface OwnEvents extends Pick<Emitter, 'preview'> {
  emit<T extends ServiceEventType>(type: T, fields: PayloadOf<T>, id?: string): EventOf<T>
}

/** The primary thread's events as a child's are copied onto them (the actor's `SessionEvents`). */
export interface CrossPoster {
  /** A copy of a child's event on the primary's subject, naming its thread (not applied there). */
  crossPost(ev: ServiceEvent, thread: string): void
}

/** One child thread of a session, alive in its actor: its history, writes and turns. */
export interface ChildThread {
  readonly id: string
  readonly member: Member
  readonly h: History
  readonly events: ThreadEmitter
  readonly turns: TurnLoop
  /** Aborts its running turn only (an interrupt naming it). */
  abort(): void
  /** Runs its turn until it parks, ends or is aborted (its own abort, or `signal`). */
  run(signal: AbortSignal): Promise<void>
  /** The last stored sequence of its subject (once what it queued is stored: `Mailbox.settled`). */
  lastSeq(): number
}

/** A thread as the API shows it (WIRE §8). `parent`: the primary's id, for a child. */
export function threadView(
  h: History,
  id: string,
  parent: string | null,
  agent: ThreadAgent | AdvisorEntry,
  totals: UsageTotals,
  now = Date.now(),
): SessionThread {
  const s = h.session
  const since = h.rec.running_since
  const activeMs = totals.active_ms + (since === null ? 0 : Math.max(0, now - since))
  const end = s.archived_at ? Date.parse(s.archived_at) : now
  // A thread's list cost is its tokens' alone: the session's runtime is the session's (WIRE §8).
  const usage = { ...toWireUsage({ ...totals, active_ms: 0 }), active_seconds: activeMs / 1000 }
  return {
    id,
    type: 'session_thread',
    session_id: s.id,
    parent_thread_id: parent,
    agent,
    status: s.archived_at ? 'terminated' : h.status,
    stats: { active_seconds: activeMs / 1000, duration_seconds: Math.max(0, end - Date.parse(s.created_at)) / 1000 },
    usage,
    workflow_run_id: null,
    created_at: s.created_at,
    updated_at: s.updated_at,
    archived_at: s.archived_at,
  }
}

/** One page of a session's threads, in the order they were made (the primary first); `statuses` filters. */
export function pageOfThreads(sessionId: string, all: readonly SessionThread[], q: ThreadListInput): Page<SessionThread> {
  const statuses = q.statuses === undefined ? undefined : [q.statuses].flat()
  const filters = { session_id: sessionId, statuses: statuses ? [...statuses].sort() : null }
  const after = decodeCursor('session_threads', filters, q.page, isRecordPosition)
  const matching = statuses ? all.filter((x) => (statuses as string[]).includes(x.status)) : all
  let start = 0
  if (after) {
    // Threads are never removed: the one the last page ended at is still there (or it ended at one filtered out since).
    const i = all.findIndex((x) => x.id === after.id)
    start = matching.findIndex((x) => all.indexOf(x) > i)
    if (start < 0) start = matching.length
  }
  const data = matching.slice(start, start + (q.limit ?? 20))
  const last = data.at(-1)
  const more = start + data.length < matching.length
  return { data, next_page: more && last ? encodeCursor('session_threads', filters, { id: last.id, created_at: last.created_at }) : null }
}
