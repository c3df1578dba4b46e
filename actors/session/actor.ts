import { isApiError } from '../../protocol/errors/api-error.js'
import { fail } from '../../protocol/errors/fail.js'
import type { RequestTag, SessionEvent } from '../../protocol/events.js'
import { fingerprint } from '../../protocol/hash.js'
import { newId, primaryThreadId } from '../../protocol/ids.js'
import type { Session, SessionThread } from '../../protocol/session.js'
import { MailboxActor } from '../kit/actor.js'
import { FencedRecord } from '../kit/fenced-record.js'
import { AppendUncertain } from '../kit/mailbox.js'
import { storeUnavailable } from '../kit/nats-errors.js'
import { emptyUsage } from './billing/usage.js'
import type { ActorDeps } from './deps.js'
import { SessionEvents } from './events.js'
import { History } from './history.js'
import { EventLog, lastSequence, deleteSessionHistory, readSession } from './log.js'
import { outcomeIdOf } from './outcomes.js'
import { queueWork, selfHostedOf } from './self-hosted.js'
import { RecordWriter } from './record-writer.js'
import { Recovery } from './recovery.js'
import { type SessionSandbox, sessionSandbox } from './session-sandbox.js'
import { sessionKey, viewOf, type SessionRecord } from './state.js'
import { ToolLock, ToolRunner } from './tool-runner.js'
import { type Emitter, TurnLoop } from './turn.js'
import { advisorOf, type ChildThread, Coordinator, childHistory, type Member, rosterOf, type ThreadHost, ThreadEmitter, threadView } from './threads.js'

/** A child thread as a replay leaves it: its history and its subject's last sequence (its fence). */
interface ReplayedThread {
  member: Member
  h: History
  lastSeq: number
}

/**
 * A client event as stored: its id, and for an outcome its `outcome_id` (derived from the id, so a retry names the same
 * one) and `max_iterations` (null when not given: the default applies).
 */
function stored(e: { type: string }, id: string): SessionEvent {
  const outcome =
    e.type === 'user.define_outcome' ? { outcome_id: outcomeIdOf(id), max_iterations: (e as { max_iterations?: number | null }).max_iterations ?? null } : {}
  return { ...e, id, ...outcome, processed_at: null } as SessionEvent
}

/** A child thread's turns write no record: its events are its state. */
const NO_RECORD = { running: () => undefined, persist: () => Promise.resolve() }

const isResult = (e: SessionEvent) => e.type === 'user.tool_result' || e.type === 'user.custom_tool_result' || e.type === 'user.tool_confirmation'

/**
 * One session, alive on the host that owns it (kit/keyed-actors.ts). It is a mailbox: client events are stored
 * first (durable before the POST answers), then handled one thing at a time, in order, by `pump`. Every change is an
 * event, applied to the History as it is stored (events.ts), so a new host rebuilds the actor by replaying them. The
 * rest is in its parts: its record (record-writer.ts), its turns (turn.ts), the tools they run (tool-runner.ts), its
 * host directory and sandbox (session-sandbox.ts), and a turn left unfinished (recovery.ts).
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
  /** The request that stored each queued message: the turn it starts names it in its log lines. */
  private readonly rids = new Map<string, string>()
  /** Requests whose events are being stored, by key: a retry waits for its first attempt. */
  private readonly accepting = new Map<string, Promise<void>>()
  /** Its child threads (threads.ts), by id, in creation order. */
  private readonly children = new Map<string, ChildThread>()
  /** A coordinator's roster, as its tools name the members; empty for any other agent. */
  private readonly members: Member[]
  /** The roster's advisor, if it has one. */
  private readonly advisor: Member | undefined
  /** The session's threads share one sandbox: one tool at a time. */
  private readonly lock = new ToolLock()

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
    this.events = SessionEvents.primary(h, new EventLog(deps.ctx.nc, this.id, lastSeq, () => mb.checkServing(), deps.tails), mb)
    this.writer = new RecordWriter(mb, h, stored, deps.settings.runningRecordMs)
    this.sandbox = sessionSandbox(h, this.events, mb, deps)
    this.members = rosterOf(h.session.agent)
    this.advisor = advisorOf(h.session.agent)
    const coordinator = this.members.length || this.advisor ? new Coordinator(this.threadHost()) : undefined
    this.tools = new ToolRunner(h, this.events, mb, this.sandbox, deps.skillTexts, this.lock, coordinator)
    const roster = coordinator ? { members: this.members, advisor: this.advisor } : undefined
    this.turns = new TurnLoop({ ...this.turnParts(h, this.events, this.tools), writer: this.writer, roster })
    for (const [id, t] of replayed) this.adopt(id, t.member, t.h, t.lastSeq)
    this.recovery = new Recovery(h, this.events, this.tools, this.turns, [...this.children.values()])
  }

  /** Rebuilds a session from its record and its history; undefined when it does not exist. */
  static async load(deps: ActorDeps, id: string): Promise<SessionActor | undefined> {
    const [cur, work] = await Promise.all([FencedRecord.read(deps.store, sessionKey(id)), deps.actors.hasWork(id)])
    if (!cur) return undefined
    const rec = cur.value
    // The record holds the latest snapshot; replay re-derives what the events say from a clean start.
    rec.totals = emptyUsage()
    rec.running_since = null
    rec.session.status = 'idle'
    rec.session.outcome_evaluations = []
    const h = new History(rec)
    const advisor = advisorOf(rec.session.agent)
    const members = [...rosterOf(rec.session.agent), ...(advisor ? [advisor] : [])]
    const threads = new Map<string, ReplayedThread>()
    let primarySeq = 0
    // Every thread's records, in the one order they were written (appends.ts): a child's after its creation.
    await readSession(deps.ctx.js, id, await lastSequence(deps.ctx.jsm, id), (r) => {
      if (r.thread !== 'primary') {
        const t = threads.get(r.thread)
        if (!t) return
        t.h.apply(r.event, r.processed, r.request)
        t.lastSeq = r.seq
        return
      }
      primarySeq = r.seq
      h.apply(r.event, r.processed, r.request)
      if (r.event.type === 'session.thread_created') {
        const member = members.find((m) => m.name === r.event.agent_name)
        const tid = String(r.event.session_thread_id)
        if (!member) return
        const ch = childHistory(rec, tid, member.agent, String(r.event.processed_at))
        threads.set(tid, { member, h: ch, lastSeq: 0 })
        h.children.set(tid, ch)
      }
    })
    // A self-hosted session parked on its worker's tools needs its item: the host that parked it may have died before
    // queueing it (the queue keeps one live item per session, so this is harmless when there is one).
    if (h.turnOpen && h.stopReason?.type === 'requires_action') void queueWork(deps.ctx, selfHostedOf(rec), undefined, true)
    // A marker left by a host that died holding the session (busy or not) is cleared when this actor leaves memory.
    return new SessionActor(deps, h, primarySeq, cur.record, h.running || work, threads)
  }

  /** A session that was just stored by create (its history is empty). */
  static fresh(deps: ActorDeps, rec: SessionRecord, record: FencedRecord<SessionRecord>): SessionActor {
    return new SessionActor(deps, new History(rec), 0, record)
  }

  /** What the session has spent, every thread's together, and its budget: each thread checks it before a model request. */
  private readonly spend = () => ({ totals: this.h.liveTotals(), budget: this.h.session.budget })

  private turnParts(h: History, events: Emitter, tools: ToolRunner) {
    return { id: this.id, h, mb: this.mb, events, tools, sandbox: this.sandbox, deps: this.deps, spend: this.spend }
  }

  /** What the coordinator's sends need of this actor. */
  private threadHost(): ThreadHost {
    return {
      h: this.h,
      events: this.events,
      members: this.members,
      advisor: this.advisor,
      child: (id) => this.children.get(id),
      spawn: (id, member) => {
        const ev = this.events.emit('session.thread_created', { session_thread_id: id, agent_name: member.name, workflow_run_id: null })
        const ch = childHistory(this.h.rec, id, member.agent, String(ev.processed_at))
        this.h.children.set(id, ch)
        return this.adopt(id, member, ch, 0)
      },
    }
  }

  /** A child thread's runtime around its history: its own subject (fenced from `lastSeq`), writes and turns. */
  private adopt(id: string, member: Member, ch: History, lastSeq: number): ChildThread {
    const log = new EventLog(this.deps.ctx.nc, this.id, lastSeq, () => this.mb.checkServing(), undefined, id)
    const events = new ThreadEmitter(this.events.thread(ch, log), this.events, id, member.name)
    const tools = new ToolRunner(ch, events, this.mb, this.sandbox, this.deps.skillTexts, this.lock)
    const turns = new TurnLoop({ ...this.turnParts(ch, events, tools), writer: NO_RECORD })
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
    this.children.set(id, child)
    return child
  }

  /** Stopped (failed, passivated or shut down): the turn stops at its next step, the shell goes. */
  protected override stopped(): void {
    this.writer.cancel()
    this.turns.abort()
    for (const c of this.children.values()) c.abort()
    void this.sandbox.close()
  }

  /** A session with a live shell stays in memory longer after its last work. */
  get idleMs(): number | undefined {
    return this.sandbox.idleMs
  }

  /** True while the actor has something to do. */
  override get busy(): boolean {
    return !!this.pumping || this.h.running || this.h.pending.size > 0
  }

  view(): Session {
    return viewOf(this.h.rec, this.h.liveTotals())
  }

  // ------------------------------------------------------------------------------------------ operations

  /**
   * Stores the client events of one POST, then lets the mailbox run. `key` names the request (`k:` and the
   * client's Idempotency-Key, else `r:` and the request id): a retry of a request already stored is answered with
   * the events stored for it, and one stored in part stores only the rest. `check` validates, against this
   * actor's state, the events about to be stored.
   */
  async accept<E extends { type: string }>(
    sent: readonly E[],
    req: { rid: string; key?: string },
    check: (events: E[]) => void = () => undefined,
    /** The events as the client sent them, when `sent` differs (File rubrics read as text): what a retry must match. */
    original: readonly unknown[] = sent,
  ): Promise<SessionEvent[]> {
    this.mb.alive()
    const key = req.key !== undefined ? `k:${req.key}` : `r:${req.rid}`
    const hash = fingerprint(original)
    // A retry that arrives while its first attempt is being stored waits for it, then finds it. From here to
    // `accepting.set` nothing awaits: two attempts that arrive together (both waiting for the actor to load)
    // must not both find nothing stored and both store.
    for (let inflight = this.accepting.get(key); inflight; inflight = this.accepting.get(key)) {
      await inflight.catch(() => undefined)
      this.mb.alive()
    }
    const prior = this.h.requests.get(key)
    if (prior && prior.hash !== hash) throw fail('idempotency_key_reused')
    const events = sent.map((e, i) => stored(e, prior?.ids[i] ?? newId('sevt')))
    const todo = events.map((e, index) => ({ e, index })).filter(({ index }) => prior?.ids[index] === undefined)
    if (!todo.length) return events
    check(todo.map((t) => sent[t.index]!))
    const storing = this.store(todo, { key, hash, count: events.length }, req)
    this.accepting.set(key, storing)
    try {
      await storing
    } finally {
      if (this.accepting.get(key) === storing) this.accepting.delete(key)
    }
    return events
  }

  private async store(todo: Array<{ e: SessionEvent; index: number }>, tag: Omit<RequestTag, 'index'>, req: { rid: string; key?: string }) {
    for (const { e } of todo) if (e.type === 'user.message') this.rids.set(e.id, req.rid)
    // The work marker goes down first: if it cannot be written, nothing is stored and the POST may be retried;
    // once the events are, a host taking over finds them.
    if (todo.some(({ e }) => e.type !== 'user.interrupt')) {
      // Nothing is stored yet, whatever the marker's write did: a retry is safe.
      await this.mb.markWork().catch((err) => {
        throw storeUnavailable(err) ?? err
      })
    }
    let storedAny = false
    let ok: boolean
    try {
      ok = await this.events.write(async () => {
        // Checked again in order with the other appends: an archive that got in first wins.
        if (this.h.session.archived_at) return false
        for (const { e, index } of todo) {
          await this.events.appendClient(e, { ...tag, index })
          storedAny = true
        }
        return true
      })
    } catch (err) {
      // Certainly nothing stored (fenced off before the first append, or the actor stopping): safe to retry.
      const retryable = (!storedAny && !(err instanceof AppendUncertain)) || req.key !== undefined
      if (retryable) throw isApiError(err) ? err : fail('actor_moving', 'session')
      throw fail('outcome_uncertain', `The request's events (${todo.length})`)
    }
    if (!ok) throw fail('session_archived', this.id)
    // An interrupt acts at once: the running turn stops at its next step (one naming a child: that thread's), and the
    // mailbox handles the rest.
    for (const { e } of todo) {
      if (e.type !== 'user.interrupt') continue
      const child = e.session_thread_id == null ? undefined : this.children.get(String(e.session_thread_id))
      if (child) child.abort()
      else this.turns.abort()
    }
    this.kick()
  }

  /** Records a service event and waits until it is stored (updates and archive answer only then). */
  async record(type: string, fields: Record<string, unknown>): Promise<SessionEvent> {
    this.mb.alive()
    const ev = this.events.emit(type, fields)
    await this.mb.settled()
    this.mb.alive()
    return ev
  }

  /** The budget moved: a turn paused at the ceiling gets another look. */
  async resumeIfPaused(): Promise<void> {
    if (this.h.turnOpen && this.h.stopReason?.type === 'budget_reached') {
      this.resume = true
      await this.mb.markWork()
      this.kick()
    }
  }

  /** Writes the record now (after updates, archive). */
  async save(): Promise<void> {
    await this.writer.persist()
    this.mb.alive()
  }

  /** The last stored sequence once every append already under way has been acknowledged. */
  async settledSeq(): Promise<number> {
    await this.mb.settled()
    return this.events.lastSeq
  }

  isRunning() {
    return this.h.running
  }

  /** Delete: the record goes first (the session is gone for readers), then its history, workdir and reference. */
  async destroy(rid?: string): Promise<void> {
    this.mb.alive()
    if (this.isRunning()) throw fail('session_running', this.id)
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
    await this.deps.outputs.forget(this.id)
    this.deps.actors.gone(this)
  }

  /** Whether `e` is an interrupt naming one of the session's child threads. */
  private namesChild(e: SessionEvent): boolean {
    return e.type === 'user.interrupt' && e.session_thread_id != null && this.children.has(String(e.session_thread_id))
  }

  // --------------------------------------------------------------------------------------------- threads

  /** The thread `id` names: the primary, or a child (404 naming `thread_id` when the session has neither). */
  private threadOf(id: string): { primary: true } | { primary: false; child: ChildThread } {
    if (id === primaryThreadId(this.id)) return { primary: true }
    const child = this.children.get(id)
    if (!child) throw fail('session_thread_not_found', 'thread_id', this.id, id)
    return { primary: false, child }
  }

  /** Thread `id` as the API shows it. */
  thread(id: string): SessionThread {
    const t = this.threadOf(id)
    if (t.primary) {
      const { multiagent: _roster, ...agent } = this.h.session.agent
      return threadView(this.h, id, null, agent, this.h.rec.totals)
    }
    return threadView(t.child.h, id, primaryThreadId(this.id), t.child.member.shown, t.child.h.rec.totals)
  }

  /** Every thread, the primary first, then the children in creation order. */
  threads(): SessionThread[] {
    return [primaryThreadId(this.id), ...this.children.keys()].map((id) => this.thread(id))
  }

  /**
   * Archives child thread `id` (its `session.thread_status_terminated`): not while it runs (409). The primary is
   * archived with its session (400).
   */
  async archiveThread(id: string): Promise<SessionThread> {
    this.mb.alive()
    const t = this.threadOf(id)
    if (t.primary) throw fail('invalid_request', `thread_id: ${id} is the session's primary thread; archive the session instead`)
    const { h, events } = t.child
    if (!h.session.archived_at) {
      if (h.running || h.turnOpen) throw fail('thread_running', id)
      events.emit('session.status_terminated', {})
      await this.mb.settled()
    }
    return this.thread(id)
  }

  /** The subject thread `id`'s events are on, and its last stored sequence once every queued append is stored. */
  async threadSeq(id: string): Promise<{ thread: string; lastSeq: number }> {
    const t = this.threadOf(id)
    await this.mb.settled()
    return t.primary ? { thread: 'primary', lastSeq: this.events.lastSeq } : { thread: id, lastSeq: t.child.lastSeq() }
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
        this.turns.begin(this.rids.get(ids[0]!))
        this.rids.delete(ids[0]!)
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
