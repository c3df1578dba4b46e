import { fail } from '../../../protocol/errors/fail.js'
import type { ClientEvent, EventOf, PayloadOf, ServiceEventType } from '../../../protocol/session-events.js'
import type { Session, SessionThread } from '../../../protocol/session.js'
import { type FencedRecord, MailboxActor } from '../../kit/index.js'
import type { FileResource, SessionResource } from '../../../protocol/schemas/resource.js'
import type { EventParamsT } from '../../../protocol/schemas/events.js'
import type { SessionUpdateInput } from '../../../protocol/schemas/session.js'
import { checkClientEvents, selfHostedOf, workAfterSend } from '../admission/index.js'
import type { ActorDeps } from './deps.js'
import { SessionEvents } from './events.js'
import { History, viewOf, type SessionRecord } from '../history/index.js'
import { EventLog, deleteSessionHistory } from '../log/index.js'
import { RecordWriter } from './record-writer.js'
import { Recovery } from './recovery.js'
import type { SessionSandbox } from '../../workdir/index.js'
import { bindSandbox } from './sandbox.js'
import { Children } from './children.js'
import { Intake } from './intake.js'
import { Changes } from './changes.js'
import { type ReplayedThread, replaySession } from './replay.js'
import { advisorOf, type Emitter, rosterOf, ToolLock, ToolRunner, TurnLoop } from '../turn/index.js'
import { ThreadCoordinator } from '../threads/index.js'
import type { McpPool } from '../../mcp/index.js'

const isResult = (e: ClientEvent) => e.type === 'user.tool_result' || e.type === 'user.custom_tool_result' || e.type === 'user.tool_confirmation'

/**
 * One session, alive on the host that owns it (kit/keyed-actors.ts). It is a mailbox: client events are stored
 * first (durable before the POST answers), then handled one thing at a time, in order, by `pump`. Every change is an
 * event, applied to the History as it is stored (events.ts), so a new host rebuilds the actor by replaying them. The
 * rest is in its parts: its record (record-writer.ts), its turns (turn.ts), the tools they run (tool-runner.ts), its
 * host directory and sandbox (sandbox.ts, through actors/workdir/), and a turn left unfinished (recovery.ts).
 */
export class SessionActor extends MailboxActor {
  private readonly events: SessionEvents
  private readonly writer: RecordWriter
  private readonly sandbox: SessionSandbox
  private readonly tools: ToolRunner
  private readonly turns: TurnLoop
  private readonly recovery: Recovery
  private pumping: Promise<void> | undefined
  /** kick() came while the pump was running: the pump runs once more when it ends. */
  private kickedWhilePumping = false
  /** The budget moved while the turn was paused at its ceiling: the pump gives the turn another look. */
  private resume = false
  /** Its child threads (children.ts). */
  private readonly children: Children
  /** The session's threads share one sandbox: one tool at a time. */
  private readonly lock = new ToolLock()
  private readonly intake: Intake
  private readonly changes: Changes
  /** The session's MCP connections: opened as its turns first need them, closed when it leaves memory. */
  private readonly mcp: McpPool

  private constructor(
    private readonly deps: ActorDeps,
    readonly h: History,
    lastSeq: number,
    stored: FencedRecord<SessionRecord>,
    workMarked = false,
    replayed: ReadonlyMap<string, ReplayedThread> = new Map(),
  ) {
    super(h.session.id, deps.actors, deps.actors.mailbox(h.session.id, workMarked))
    const { mb } = this
    this.mcp = deps.mcp.forSession(h.session.id, h.session.vault_ids)
    this.events = SessionEvents.primary(h, new EventLog(deps.ctx.nc, this.id, lastSeq, () => mb.checkServing(), deps.tails), mb)
    this.changes = new Changes({
      id: this.id,
      h,
      mb,
      deps,
      mcp: this.mcp,
      hasWork: () => this.hasWork,
      record: (type, fields) => this.record(type, fields),
      save: () => this.save(),
      resumeIfPaused: () => this.resumeIfPaused(),
      view: () => this.view(),
      destroy: (rid) => this.destroy(rid),
    })
    this.intake = new Intake({ id: this.id, h, mb, events: this.events, interrupted: (e) => this.interrupted(e), kick: () => this.kick() })
    this.writer = new RecordWriter(mb, h, stored, deps.settings.runningRecordMs)
    this.sandbox = bindSandbox(h, this.events, mb, deps.workdirs, deps.envSecrets)
    const members = rosterOf(h.session.agent)
    const advisor = advisorOf(h.session.agent)
    const host = { id: this.id, h, mb, events: this.events, deps, sandbox: this.sandbox, lock: this.lock, mcp: this.mcp }
    this.children = new Children({ ...host, turnParts: (ch, ev, tools) => this.turnParts(ch, ev, tools) }, members, advisor)
    const coordinator = members.length || advisor ? new ThreadCoordinator(this.children.threadHost()) : undefined
    this.tools = new ToolRunner(h, this.events, mb, this.sandbox, deps.skillTexts, this.lock, this.mcp, coordinator)
    const roster = coordinator ? { members, advisor } : undefined
    this.turns = new TurnLoop({ ...this.turnParts(h, this.events, this.tools), writer: this.writer, roster })
    for (const [id, t] of replayed) this.children.adopt(id, t.member, t.h, t.lastSeq)
    this.recovery = new Recovery(h, this.events, this.tools, this.turns, [...this.children.values()])
  }

  /** Rebuilds a session from its record and its history; undefined when it does not exist. */
  static async load(deps: ActorDeps, id: string): Promise<SessionActor | undefined> {
    const r = await replaySession(deps, id)
    return r && new SessionActor(deps, r.h, r.primarySeq, r.record, r.work, r.threads)
  }

  /** A session that was just stored by create (its history is empty). */
  static fresh(deps: ActorDeps, rec: SessionRecord, record: FencedRecord<SessionRecord>): SessionActor {
    return new SessionActor(deps, new History(rec), 0, record)
  }

  /** What the session has spent, every thread's together, and its budget: each thread checks it before a model request. */
  private readonly spend = () => ({ totals: this.h.liveTotals(), budget: this.h.session.budget })

  private turnParts(h: History, events: Emitter, tools: ToolRunner) {
    return { id: this.id, h, mb: this.mb, events, tools, mcp: this.mcp, sandbox: this.sandbox, deps: this.deps, spend: this.spend }
  }

  /** Stopped (failed, passivated or shut down): the turn stops at its next step, the shell goes. */
  protected override stopped(): void {
    this.writer.cancel()
    this.turns.abort()
    for (const c of this.children.values()) c.abort()
    void this.sandbox.close()
    void this.mcp.close()
  }

  /** A session with a live shell stays in memory longer after its last work. */
  get idleMs(): number | undefined {
    return this.sandbox.idleMs
  }

  /** True while the actor has something to do (a change asked by a handler included: it may be waiting on a copy). */
  override get busy(): boolean {
    return !!this.pumping || this.hasWork || this.changes.busy
  }

  /** A turn runs, or input waits for one. */
  private get hasWork(): boolean {
    return this.h.running || this.h.pending.size > 0
  }

  view(): Session {
    return viewOf(this.h.rec, this.h.liveTotals())
  }

  // ------------------------------------------------------------------------------------------ operations

  /**
   * Stores the client events of one POST, then lets the mailbox run (intake.ts). `check` validates, against this
   * actor's state, the events about to be stored; `original`: the events as the client sent them, when `sent` differs.
   */
  accept<E extends EventParamsT>(
    sent: readonly E[],
    req: { rid: string; key?: string },
    check: (events: E[]) => void = () => undefined,
    original: readonly unknown[] = sent,
  ): Promise<ClientEvent[]> {
    return this.intake.accept(sent, req, check, original)
  }

  /** An interrupt was stored: the turn it names (a child's, or the primary's) stops at its next step. */
  private interrupted(e: EventOf<'user.interrupt'>): void {
    const child = e.session_thread_id == null ? undefined : this.children.get(e.session_thread_id)
    if (child) child.abort()
    else this.turns.abort()
  }

  /** Records a service event and waits until it is stored (updates and archive answer only then). */
  private async record<T extends ServiceEventType>(type: T, fields: PayloadOf<T>): Promise<EventOf<T>> {
    this.mb.alive()
    const ev = this.events.emit(type, fields)
    await this.mb.settled()
    this.mb.alive()
    return ev
  }

  /** The budget moved: a turn paused at the ceiling gets another look. */
  private async resumeIfPaused(): Promise<void> {
    if (this.h.turnOpen && this.h.stopReason?.type === 'budget_reached') {
      this.resume = true
      await this.mb.markWork()
      this.kick()
    }
  }

  /** Writes the record now (after updates, archive). */
  private async save(): Promise<void> {
    await this.writer.persist()
    this.mb.alive()
  }

  /** A session update, stored as `session.updated` before it answers. */
  update(b: SessionUpdateInput): Promise<Session> {
    return this.changes.update(b)
  }

  /** Archives the session; not while it has work. */
  archive(rid: string): Promise<Session> {
    return this.changes.archive(rid)
  }

  /** The session's resources now. */
  get resources(): readonly SessionResource[] {
    return this.h.session.resources
  }

  /** Adds resource `r` once `copy.make` has made its file's copy (changes.ts). */
  addResource(r: FileResource, copy: { make(): Promise<unknown>; drop(): Promise<void> }): Promise<FileResource> {
    return this.changes.addResource(r, copy)
  }

  /** Removes resource `id` from the session's record. */
  removeResource(id: string): Promise<FileResource> {
    return this.changes.removeResource(id)
  }

  /** Deletes the session and all it holds. */
  delete(rid: string): Promise<void> {
    return this.changes.delete(rid)
  }

  /** A POST of client events: checked against the session as it is when they are stored, then handled in order. */
  async send(events: readonly EventParamsT[], req: { rid: string; key?: string }, original: readonly EventParamsT[]): Promise<ClientEvent[]> {
    const data = await this.accept(events, req, (sent) => checkClientEvents(this.h, sent), original)
    await workAfterSend(this.deps.ctx, selfHostedOf(this.h.rec), original, req.rid)
    return data
  }

  /** Whether client event `id` is stored and not yet handled. */
  isQueued(id: string): boolean {
    return this.h.pending.has(id)
  }

  /** The last stored sequence once every append already under way has been acknowledged. */
  async settledSeq(): Promise<number> {
    await this.mb.settled()
    return this.events.lastSeq
  }

  private async destroy(rid: string): Promise<void> {
    if (this.h.running) throw fail('session_running', this.id)
    this.mb.stop()
    this.turns.abort()
    await this.mb.settled()
    await this.mb.persisted()
    if (!(await this.writer.delete())) {
      this.deps.actors.gone(this)
      throw fail('actor_moving', 'session')
    }
    this.events.deleted()
    // Committed: the deletion is told before its history goes (kit/outbox.ts).
    await this.deps.outbox.publish('session.deleted', this.id, Date.now())
    await this.mb.unmarkWork(true)
    await deleteSessionHistory(this.deps.ctx.jsm, this.id)
    await this.deps.environments.release(this.h.session.environment_id, this.id, rid)
    await this.sandbox.remove()
    await this.deps.workdirs.forget(this.id)
    this.deps.actors.gone(this)
  }

  /** Whether `e` is an interrupt naming one of the session's child threads. */
  private namesChild(e: ClientEvent): boolean {
    return e.type === 'user.interrupt' && e.session_thread_id != null && this.children.get(e.session_thread_id) !== undefined
  }

  // --------------------------------------------------------------------------------------------- threads

  /** Thread `id` as the API shows it (404 naming `thread_id` when the session has none of that id). */
  thread(id: string): SessionThread {
    return this.children.thread(id)
  }

  /** Every thread, the primary first, then the children in creation order. */
  threads(): SessionThread[] {
    return this.children.threads()
  }

  /** Archives child thread `id`: not while it runs (409); the primary is archived with its session (400). */
  archiveThread(id: string): Promise<SessionThread> {
    return this.children.archive(id)
  }

  /** The subject thread `id`'s events are on, and its last stored sequence once every queued append is stored. */
  threadSeq(id: string): Promise<{ thread: string; lastSeq: number }> {
    return this.children.seq(id)
  }

  // ------------------------------------------------------------------------------------------- lifecycle

  /** The actor failed again and again while running a turn: the turn ends (recovery.ts). Queued input still runs. */
  override abandon(message: string): void {
    this.recovery.abandon(message)
    this.kick()
  }

  /**
   * Stops everything without writing (the session moves to another host, or this one stops); the turn's pump ends
   * first. On an orderly hand-over an idle session's work marker goes, so that its next owner has nothing to resume
   * (see `passivate`); a turn in flight keeps it, and is resumed there exactly as after a crash.
   */
  override async shutdown(handOver = false): Promise<void> {
    const idle = !this.busy && !this.dead
    this.mb.stop()
    this.turns.abort()
    await this.pumping?.catch(() => undefined)
    // Appends already sent may still land: the next owner must read them, or its first append is fenced off.
    await this.mb.settled().catch(() => undefined)
    await this.sandbox.close()
    if (handOver && idle) {
      await this.mb.persisted().catch(() => undefined)
      await this.mb.unmarkWork()
    }
  }

  /**
   * The work marker outlives a turn while the session stays in memory, and goes when it leaves: a session in use
   * pays no marker write and delete per turn (two KV writes, one of them before its POST is answered). A host that
   * dies holding it makes its next owner resume a session with nothing to do: one replay, no event. The record is
   * written first, since a host taking over answers reads of unmarked sessions from it.
   */
  override async passivate(): Promise<boolean> {
    if (this.busy) return false
    await this.mb.persisted()
    if (this.busy || this.dead) return false
    await this.mb.unmarkWork()
    // Work that arrived during the delete marked the session again, after it (one connection keeps the order).
    return super.passivate()
  }

  override kick(): void {
    this.lastActive = Date.now()
    if (this.dead) return
    if (this.pumping) {
      // The running pump may already have taken its last look at the mailbox (it is finishing): look again after it.
      this.kickedWhilePumping = true
      return
    }
    this.kickedWhilePumping = false
    this.pumping = this.pump()
      .catch((err) => this.mb.fail(err))
      .finally(() => {
        this.pumping = undefined
        this.lastActive = Date.now()
        if (!this.dead && this.kickedWhilePumping) this.kick()
      })
  }

  // ------------------------------------------------------------------------------------------- the mailbox

  /** Handles what waits, one thing at a time: a turn left unfinished, then interrupts, tool results, messages. */
  private async pump(): Promise<void> {
    for (;;) {
      if (this.dead) return
      if (this.recovery.due) {
        await this.recovery.resume()
        continue
      }
      const pending = [...this.h.pending.values()]
      // Work that arrived while the previous pass was unmarking the session (accept saw it still marked).
      if (this.resume || pending.some((e) => e.type !== 'user.interrupt')) await this.mb.markWork()
      // An interrupt handles everything that arrived before it: the turn stops, queued input joins the
      // conversation without starting a turn, and the session goes idle.
      let lastInterrupt = pending.length - 1
      while (lastInterrupt >= 0 && !(pending[lastInterrupt]!.type === 'user.interrupt' && !this.namesChild(pending[lastInterrupt]!))) lastInterrupt--
      if (lastInterrupt >= 0) {
        const swept = pending.slice(0, lastInterrupt + 1)
        // Input swept up with the interrupt asked for a turn: the client is owed an idle, as for a stopped turn.
        const owed = this.h.turnOpen || this.h.status !== 'idle' || swept.some((e) => e.type !== 'user.interrupt')
        this.events.processed(swept.map((e) => e.id))
        // Every thread stopped: each that was running says so.
        for (const c of this.children.values()) if (c.h.running) c.turns.idle({ type: 'end_turn' })
        if (owed) await this.turns.end({ type: 'end_turn' })
        continue
      }
      // An interrupt naming a child is that thread's: its send answers (threads.ts); the turn goes on.
      const results = pending.filter((e) => isResult(e) || this.namesChild(e))
      if (results.length) {
        this.events.processed(results.map((e) => e.id))
        if (this.h.turnOpen) await this.turns.run()
        continue
      }
      const i = pending.findIndex((e) => e.type === 'user.message' || e.type === 'user.define_outcome' || e.type === 'system.message')
      if (i >= 0) {
        const ids = [pending[i]!.id]
        if (pending[i + 1]?.type === 'system.message') ids.push(pending[i + 1]!.id)
        this.turns.begin(this.intake.takeRequest(ids[0]!))
        this.events.processed(ids)
        await this.turns.run()
        continue
      }
      if (this.resume) {
        this.resume = false
        if (this.h.turnOpen) await this.turns.run()
        continue
      }
      // Nothing left. The work marker stays while the session is in memory (see `passivate`).
      this.events.flushProcessed()
      await this.mb.settled()
      await this.mb.persisted()
      if (this.dead || this.h.pending.size > 0) continue
      return
    }
  }
}
