import { fail } from '../../../protocol/errors/fail.js'
import { primaryThreadId } from '../../../protocol/ids.js'
import type { SessionThread } from '../../../protocol/session.js'
import type { Mailbox } from '../../kit/index.js'
import type { SessionSandbox } from '../../workdir/index.js'
import type { History } from '../history/index.js'
import { EventLog } from '../log/index.js'
import { type ChildThread, childHistory, type ThreadHost, ThreadEmitter, threadView } from '../threads/index.js'
import type { Member } from '../turn/index.js'
import { type ToolLock, ToolRunner } from '../turn/index.js'
import { TurnLoop, type TurnParts } from '../turn/index.js'
import type { Emitter } from '../turn/index.js'
import type { ActorDeps } from './deps.js'
import type { SessionEvents } from './events.js'
import type { McpPool } from '../../mcp/index.js'

/** A child thread's turns write no record: its events are its state. */
export const NO_RECORD = { running: () => undefined, persist: () => Promise.resolve() }

/** What a session's child threads need of their actor. */
export interface ChildrenHost {
  readonly id: string
  /** The primary thread's history. */
  readonly h: History
  readonly mb: Mailbox
  readonly events: SessionEvents
  readonly deps: ActorDeps
  readonly sandbox: SessionSandbox
  /** The session's threads share one sandbox: one tool at a time. */
  readonly lock: ToolLock
  /** The session's MCP connections, shared by its threads. */
  readonly mcp: McpPool
  /** What every thread's turn loop shares, for a thread's history, events and tools. */
  turnParts(h: History, events: Emitter, tools: ToolRunner): Omit<TurnParts, 'writer' | 'roster'>
}

/**
 * A session's child threads (threads/), alive in its actor: each one's runtime around its history (its subject, writes,
 * turns), the coordinator's way to make them, and every thread as the API shows it, the primary's included.
 */
export class Children {
  /** By id, in creation order. */
  private readonly all = new Map<string, ChildThread>()

  constructor(
    private readonly a: ChildrenHost,
    /** A coordinator's roster, as its tools name the members; empty for any other agent. */
    readonly members: readonly Member[],
    /** The roster's advisor, if it has one. */
    readonly advisor: Member | undefined,
  ) {}

  get(id: string): ChildThread | undefined {
    return this.all.get(id)
  }

  values(): IterableIterator<ChildThread> {
    return this.all.values()
  }

  /** What the coordinator's sends need of this actor. */
  threadHost(): ThreadHost {
    return {
      h: this.a.h,
      events: this.a.events,
      members: this.members,
      advisor: this.advisor,
      child: (id) => this.all.get(id),
      spawn: (id, member) => {
        const ev = this.a.events.emit('session.thread_created', { session_thread_id: id, agent_name: member.name, workflow_run_id: null })
        const ch = childHistory(this.a.h.rec, id, member.agent, String(ev.processed_at))
        this.a.h.children.set(id, ch)
        return this.adopt(id, member, ch, 0)
      },
    }
  }

  /** A child thread's runtime around its history: its own subject (fenced from `lastSeq`), writes and turns. */
  adopt(id: string, member: Member, ch: History, lastSeq: number): ChildThread {
    const log = new EventLog(this.a.deps.ctx.nc, this.a.id, lastSeq, () => this.a.mb.checkServing(), undefined, id)
    const events = new ThreadEmitter(this.a.events.thread(ch, log), this.a.events, id, member.name)
    const tools = new ToolRunner(ch, events, this.a.mb, this.a.sandbox, this.a.deps.skillTexts, this.a.lock, this.a.mcp)
    const turns = new TurnLoop({ ...this.a.turnParts(ch, events, tools), writer: NO_RECORD })
    const child: ChildThread = {
      id,
      member,
      h: ch,
      events,
      turns,
      abort: () => turns.abort(),
      lastSeq: () => log.lastSeq,
      async run(signal) {
        const stop = () => turns.abort()
        signal.addEventListener('abort', stop, { once: true })
        try {
          if (!signal.aborted) await turns.run()
        } finally {
          signal.removeEventListener('abort', stop)
        }
      },
    }
    this.all.set(id, child)
    return child
  }

  /** The thread `id` names: the primary, or a child (404 naming `thread_id` when the session has neither). */
  private threadOf(id: string): { primary: true } | { primary: false; child: ChildThread } {
    if (id === primaryThreadId(this.a.id)) return { primary: true }
    const child = this.all.get(id)
    if (!child) throw fail('session_thread_not_found', 'thread_id', this.a.id, id)
    return { primary: false, child }
  }

  /** Thread `id` as the API shows it. */
  thread(id: string): SessionThread {
    const t = this.threadOf(id)
    if (t.primary) {
      const { multiagent: _roster, ...agent } = this.a.h.session.agent
      return threadView(this.a.h, id, null, agent, this.a.h.rec.totals)
    }
    return threadView(t.child.h, id, primaryThreadId(this.a.id), t.child.member.shown, t.child.h.rec.totals)
  }

  /** Every thread, the primary first, then the children in creation order. */
  threads(): SessionThread[] {
    return [primaryThreadId(this.a.id), ...this.all.keys()].map((id) => this.thread(id))
  }

  /**
   * Archives child thread `id` (its `session.thread_status_terminated`): not while it runs (409). The primary is
   * archived with its session (400).
   */
  async archive(id: string): Promise<SessionThread> {
    this.a.mb.alive()
    const t = this.threadOf(id)
    if (t.primary) throw fail('invalid_request', `thread_id: ${id} is the session's primary thread; archive the session instead`)
    const { h, events } = t.child
    if (!h.session.archived_at) {
      if (h.running || h.turnOpen) throw fail('thread_running', id)
      events.status('terminated')
      await this.a.mb.settled()
    }
    return this.thread(id)
  }

  /** The subject thread `id`'s events are on, and its last stored sequence once every queued append is stored. */
  async seq(id: string): Promise<{ thread: string; lastSeq: number }> {
    const t = this.threadOf(id)
    await this.a.mb.settled()
    return t.primary ? { thread: 'primary', lastSeq: this.a.events.lastSeq } : { thread: id, lastSeq: t.child.lastSeq() }
  }
}
