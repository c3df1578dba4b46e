import path from 'node:path'
import { rm } from 'node:fs/promises'
import type { MessageCreateParamsStreaming } from '@anthropic-ai/sdk/resources/messages'
import { isApiError } from '../../protocol/errors/api-error.js'
import { fail } from '../../protocol/errors/fail.js'
import type { RequestTag, SessionEvent, StopReason } from '../../protocol/events.js'
import { fingerprint } from '../../protocol/hash.js'
import { newId } from '../../protocol/ids.js'
import type { Session } from '../../protocol/session.js'
import { now } from '../../protocol/time.js'
import { budgetReached } from './billing/budget.js'
import { emptyUsage, type ModelUsage, type UsageTotals } from './billing/usage.js'
import { toWireUsage } from './billing/wire-usage.js'
import { createHostSandbox, type Sandbox } from '../../sandbox/index.js'
import type { RecordStore } from '../kit/store.js'
import { FencedRecord } from '../kit/fenced-record.js'
import type { KeyedActors } from '../kit/keyed-actors.js'
import { storeUnavailable } from '../kit/nats-errors.js'
import { MailboxActor } from '../kit/actor.js'
import { intervalAfter, type RetryPolicy } from '../kit/retry-policy.js'
import { AppendUncertain, FenceLost } from '../kit/mailbox.js'
import type { HostContext } from '../kit/types.js'
import { Appends } from './appends.js'
import { History } from './history.js'
import type { AgentResolver } from './admission.js'
import type { EnvironmentRefs } from './references.js'
import { EventLog, lastSequence, purgeSession, readSession } from './log.js'
import { classifyFailure, streamModel, type Model, type ModelResponse } from './model.js'
import { sessionKey, type SessionRecord } from './state.js'
import { permissionFields, routeTool, toolDefinitions } from './tools.js'

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
}

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
}

/** A session with a live shell keeps it (and stays in memory) this long after its last work. */
const SANDBOX_IDLE_MS = 10 * 60_000

const ZERO_USAGE = { input_tokens: 0, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, speed: null }
const NOT_RERUN =
  'The host running this tool stopped before the tool finished. It was not run again, so that it never runs twice; run it again if that is safe.'
const NO_MODEL =
  'No model endpoint is configured on this server: set TROUPE_MODEL_BASE_URL or ANTHROPIC_API_KEY on the serving hosts (the key alone calls https://api.anthropic.com; a base URL that needs a key takes both).'

const isResult = (e: SessionEvent) => e.type === 'user.tool_result' || e.type === 'user.custom_tool_result' || e.type === 'user.tool_confirmation'

/**
 * One session, alive on the host that owns its partition. It is a mailbox: client events are stored first
 * (durable before the POST answers), then handled one thing at a time, in order, by `pump`. Every change is
 * an appended event, applied to the History in the same step, so the actor's memory is always exactly
 * "the stored events, applied"; that is also how a new host rebuilds it after a takeover.
 */
export class SessionActor extends MailboxActor {
  private turn: AbortController | undefined
  private pumping: Promise<void> | undefined
  private sandbox: Sandbox | undefined
  private recovering = false
  private resume = false
  /** kick() came while the pump was running: the pump runs once more when it ends. */
  private kickedWhilePumping = false
  private lastStop: { reason: StopReason; details: unknown } | undefined
  private attempts = 0
  /** What the running turn did so far, for its log line when it ends (running → idle). */
  private turnStats: TurnStats | undefined
  /** The request that stored each queued message, and the one whose message started the turn: for log lines. */
  private readonly rids = new Map<string, string>()
  private turnRid: string | undefined
  /** Client events handled whose ids the next stored event carries. */
  private readonly handledIds: string[] = []
  /** Requests whose events are being stored, by key: a retry waits for its first attempt. */
  private readonly accepting = new Map<string, Promise<void>>()
  /** Every write of this session goes through here, in order: emitted events are stored in batches. */
  private readonly appends: Appends
  readonly log: EventLog
  /** The running turn's record, due once it has run `settings.runningRecordMs`. */
  private runningRecord: NodeJS.Timeout | undefined

  private constructor(
    private readonly deps: ActorDeps,
    readonly h: History,
    lastSeq: number,
    private readonly stored: FencedRecord<SessionRecord>,
    workMarked = false,
  ) {
    super(h.session.id, deps.actors, deps.actors.mailbox(h.session.id, workMarked))
    this.log = new EventLog(deps.ctx.nc, this.id, lastSeq, () => this.mb.checkServing())
    this.appends = new Appends(this.mb, this.log)
  }

  /** Stopped (failed, passivated or shut down): the turn stops at its next step, the shell goes. */
  protected override stopped(): void {
    clearTimeout(this.runningRecord)
    this.turn?.abort()
    void this.sandbox?.close()
  }

  /** A session with a live shell stays in memory this long after its last work. */
  get idleMs(): number | undefined {
    return this.sandbox ? SANDBOX_IDLE_MS : undefined
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
    const h = new History(rec)
    const last = await lastSequence(deps.ctx.jsm, id)
    await readSession(deps.ctx.js, id, last, (r) => h.apply(r.event, r.processed, r.request))
    const recovering = h.status === 'running' || h.status === 'rescheduling'
    // A marker left by a host that died holding the session (busy or not) is cleared when this actor leaves memory.
    const actor = new SessionActor(deps, h, last, cur.record, recovering || work)
    actor.recovering = recovering
    return actor
  }

  /** A session that was just stored by create (its history is empty). */
  static fresh(deps: ActorDeps, rec: SessionRecord, record: FencedRecord<SessionRecord>): SessionActor {
    return new SessionActor(deps, new History(rec), 0, record)
  }

  /** True while the actor has something to do. */
  override get busy(): boolean {
    return !!this.pumping || this.h.status === 'running' || this.h.status === 'rescheduling' || this.h.pending.size > 0
  }

  // ----------------------------------------------------------------------------------------------- views

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
  ): Promise<SessionEvent[]> {
    this.mb.alive()
    const key = req.key !== undefined ? `k:${req.key}` : `r:${req.rid}`
    const hash = fingerprint(sent)
    // A retry that arrives while its first attempt is being stored waits for it, then finds it. From here to
    // `accepting.set` nothing awaits: two attempts that arrive together (both waiting for the actor to load)
    // must not both find nothing stored and both store.
    for (let inflight = this.accepting.get(key); inflight; inflight = this.accepting.get(key)) {
      await inflight.catch(() => undefined)
      this.mb.alive()
    }
    const prior = this.h.requests.get(key)
    if (prior && prior.hash !== hash) throw fail('idempotency_key_reused')
    const events = sent.map((e, i) => ({ ...e, id: prior?.ids[i] ?? newId('sevt'), processed_at: null }) as SessionEvent)
    const todo = events.map((e, index) => ({ e, index })).filter(({ index }) => prior?.ids[index] === undefined)
    if (!todo.length) return events
    check(todo.map((t) => sent[t.index]!))
    const stored = this.store(todo, { key, hash, count: events.length }, req)
    this.accepting.set(key, stored)
    try {
      await stored
    } finally {
      if (this.accepting.get(key) === stored) this.accepting.delete(key)
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
      ok = await this.appends.write(async () => {
        // Checked again in order with the other appends: an archive that got in first wins.
        if (this.h.session.archived_at) return false
        for (const { e, index } of todo) {
          const request = { ...tag, index }
          await this.log.append(e, { id: e.id, request })
          storedAny = true
          this.h.apply(e, undefined, request)
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
    // An interrupt acts at once: the running turn stops at its next step, and the mailbox handles the rest.
    if (todo.some(({ e }) => e.type === 'user.interrupt')) this.turn?.abort()
    this.kick()
  }

  /** Records a service event and waits until it is stored (updates and archive answer only then). */
  async record(type: string, fields: Record<string, unknown>): Promise<SessionEvent> {
    this.mb.alive()
    const ev = this.emit(type, fields)
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
    await this.persist()
    this.mb.alive()
  }

  /** The last stored sequence once every append already under way has been acknowledged. */
  async settledSeq(): Promise<number> {
    await this.mb.settled()
    return this.log.lastSeq
  }

  isRunning() {
    return this.h.status === 'running' || this.h.status === 'rescheduling'
  }

  /** Delete: the record goes first (the session is gone for readers), then its history, workdir and reference. */
  async destroy(rid?: string): Promise<void> {
    this.mb.alive()
    if (this.isRunning()) throw fail('session_running', this.id)
    const { ctx } = this.deps
    this.mb.stop()
    this.turn?.abort()
    await this.mb.settled()
    await this.mb.persisted()
    const deleted = await this.stored.delete().then(
      () => true,
      (err) => (err instanceof FenceLost ? false : Promise.reject(err)),
    )
    if (!deleted) {
      this.deps.actors.gone(this)
      throw fail('actor_moving', 'session')
    }
    this.log.notify('session.deleted', { type: 'session.deleted', id: newId('sevt'), processed_at: now() })
    await this.mb.unmarkWork(true)
    await purgeSession(ctx.jsm, this.id)
    await this.deps.environments.release(this.h.session.environment_id, this.id, rid)
    await this.sandbox?.close()
    await rm(this.workdir(), { recursive: true, force: true }).catch(() => undefined)
    this.deps.actors.gone(this)
  }

  /**
   * Ends the turn in flight after this actor failed again and again: the client is told why, and the session
   * goes idle instead of staying `running` with nothing driving it. Queued input still runs.
   */
  override abandon(message: string): void {
    this.recovering = false
    if (this.h.status === 'running' || this.h.status === 'rescheduling') {
      // What the failed attempts left open is closed, as after a takeover: a stored tool use gets its one result.
      this.closeLeftOpen()
      this.emit('session.error', { error: { type: 'unknown_error', message, retry_status: { type: 'exhausted' } } })
      this.idle({ type: 'retries_exhausted' })
    }
    this.kick()
  }

  /**
   * Stops everything without writing (partition given away, host stopping); the turn's pump ends first. On an orderly
   * hand-over an idle session's work marker goes, so that its next owner has nothing to resume (see `passivate`); a
   * turn in flight keeps it, and is resumed there exactly as after a crash.
   */
  override async shutdown(handOver = false): Promise<void> {
    const idle = !this.busy && !this.dead
    this.mb.stop()
    this.turn?.abort()
    await this.pumping?.catch(() => undefined)
    // Appends already sent may still land: the next owner must read them, or its first append is fenced off.
    await this.mb.settled().catch(() => undefined)
    await this.sandbox?.close()
    if (handOver && idle) {
      await this.mb.persisted().catch(() => undefined)
      await this.mb.unmarkWork()
    }
  }

  /**
   * The work marker outlives a turn while the session stays in memory, and goes when it leaves: a session in use
   * pays no marker write and delete per turn (two KV writes, one of them before its POST is answered). A host that
   * dies holding it makes its next owner resume a session with nothing to do: one replay, no event. The record is
   * written first, since a host taking over serves reads of unmarked sessions from it.
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

  private async pump(): Promise<void> {
    for (;;) {
      if (this.dead) return
      if (this.recovering) {
        this.recovering = false
        await this.recover()
        continue
      }
      const pending = [...this.h.pending.values()]
      // Work that arrived while the previous pass was unmarking the session (accept saw it still marked).
      if (this.resume || pending.some((e) => e.type !== 'user.interrupt')) await this.mb.markWork()
      // An interrupt handles everything that arrived before it: the turn stops, queued input joins the
      // conversation without starting a turn, and the session goes idle.
      const lastInterrupt = pending.map((e) => e.type).lastIndexOf('user.interrupt')
      if (lastInterrupt >= 0) {
        const swept = pending.slice(0, lastInterrupt + 1)
        // Input swept up with the interrupt asked for a turn: the client is owed an idle, as for a stopped turn.
        const owed = this.h.turnOpen || this.h.status !== 'idle' || swept.some((e) => e.type !== 'user.interrupt')
        this.processed(swept.map((e) => e.id))
        if (owed) this.idle({ type: 'end_turn' })
        continue
      }
      const results = pending.filter(isResult)
      if (results.length) {
        this.processed(results.map((e) => e.id))
        if (this.h.turnOpen) await this.runTurn()
        continue
      }
      const i = pending.findIndex((e) => e.type === 'user.message' || e.type === 'system.message')
      if (i >= 0) {
        const ids = [pending[i]!.id]
        if (pending[i + 1]?.type === 'system.message') ids.push(pending[i + 1]!.id)
        this.turnRid = this.rids.get(ids[0]!)
        this.rids.delete(ids[0]!)
        this.processed(ids)
        this.attempts = 0
        await this.runTurn()
        continue
      }
      if (this.resume) {
        this.resume = false
        if (this.h.turnOpen) await this.runTurn()
        continue
      }
      // Nothing left. The work marker stays while the session is in memory (see `passivate`).
      this.flushHandled()
      await this.mb.settled()
      await this.mb.persisted()
      if (this.dead || this.h.pending.size > 0) continue
      return
    }
  }

  /** A takeover: the previous host died mid-turn. Close what it left open, then carry on with the turn. */
  private async recover(): Promise<void> {
    this.emit('session.status_rescheduled', {})
    this.closeLeftOpen()
    await this.runTurn()
  }

  /**
   * Closes what a host that stopped mid-turn left open: the model request span (as an error) and the built-in
   * tool uses that may have started (an error result; never run again, so none runs twice). Tools still waiting
   * for a confirmation stay parked.
   */
  private closeLeftOpen(): void {
    if (this.h.openSpan) {
      this.emit('span.model_request_end', { model_request_start_id: this.h.openSpan, is_error: true, model_usage: ZERO_USAGE })
    }
    for (const t of [...this.h.open.values()]) {
      if (t.kind === 'builtin' && (!t.ask || t.confirmation?.result === 'allow')) {
        this.emit('agent.tool_result', { tool_use_id: t.eventId, content: [{ type: 'text', text: NOT_RERUN }], is_error: true })
      }
    }
  }

  private async runTurn(): Promise<void> {
    // An interrupt stored after the mailbox took this turn's input, but before the turn began, found no turn
    // to abort: the turn does not start, and the mailbox handles the interrupt next.
    if ([...this.h.pending.values()].some((e) => e.type === 'user.interrupt')) return
    // An archive that landed while this turn's input was being stored or taken from the mailbox wins: an archived
    // session never starts a turn (it would run on, refusing the interrupt and the delete that could stop it).
    if (this.h.session.archived_at && !this.isRunning()) return
    const ac = new AbortController()
    this.turn = ac
    try {
      if (this.h.status !== 'running') {
        this.turnStats ??= newTurnStats()
        this.emit('session.status_running', {})
        this.runningRecord ??= setTimeout(() => {
          this.runningRecord = undefined
          if (!this.dead) void this.persist()
        }, this.deps.settings.runningRecordMs)
      }
      for (;;) {
        if (ac.signal.aborted || this.dead) return
        if (this.h.open.size) {
          await this.runTools(ac.signal)
          if (ac.signal.aborted || this.dead) return
          const waiting = [...this.h.open.values()]
          if (waiting.length) return this.idle({ type: 'requires_action', event_ids: waiting.map((t) => t.eventId) })
          continue
        }
        if (!this.h.needsModel()) {
          const stop = this.lastStop
          this.lastStop = undefined
          return this.idle(stop?.reason ?? { type: 'end_turn' }, stop?.details ?? null)
        }
        if (budgetReached(this.h.liveTotals(), this.h.session.budget)) {
          this.emit('session.usage', { usage: toWireUsage(this.h.liveTotals()), budget: this.h.session.budget })
          return this.idle({ type: 'budget_reached' })
        }
        if (!(await this.modelRequest(ac.signal))) return
      }
    } finally {
      if (this.turn === ac) this.turn = undefined
    }
  }

  private async runTools(signal: AbortSignal): Promise<void> {
    for (const t of [...this.h.open.values()]) {
      if (signal.aborted || this.dead) return
      if (t.kind !== 'builtin' || (t.ask && !t.confirmation)) continue
      if (t.confirmation?.result === 'deny') {
        const text = t.confirmation.deny_message || 'The user denied this tool use.'
        this.emit('agent.tool_result', { tool_use_id: t.eventId, content: [{ type: 'text', text }], is_error: true })
        continue
      }
      if (routeTool(this.h.session.agent, t.name).kind !== 'builtin') {
        const text = `Tool ${JSON.stringify(t.name)} is not available to this agent.`
        this.emit('agent.tool_result', { tool_use_id: t.eventId, content: [{ type: 'text', text }], is_error: true })
        continue
      }
      // The side effect starts only once its intent (the stored agent.tool_use) is durable: a host that dies
      // after this point leaves a tool_use the next owner closes with an error result, never running it again;
      // one that dies before it leaves nothing that ran.
      await this.mb.settled()
      if (signal.aborted || this.dead) return
      // A host whose heartbeat lapsed (a pause) may have lost the session meanwhile: its new owner closes this
      // tool use with an error result, so running it here could make it run after all. Step down instead.
      this.mb.checkServing('it starts no tool until it re-reads its partitions')
      const result = await this.sandboxFor().run(t.name, t.input, signal)
      // An interrupted run still gets its result (the sandbox says it was interrupted); then the turn stops.
      this.emit('agent.tool_result', { tool_use_id: t.eventId, content: result.content, is_error: result.is_error })
      if (signal.aborted) return
    }
  }

  /** One model request with its retries. False when the turn ended (exhausted, failed or interrupted). */
  private async modelRequest(signal: AbortSignal): Promise<boolean> {
    const model = this.deps.model
    const stats = (this.turnStats ??= newTurnStats())
    if (!model) {
      this.emit('session.error', { error: { type: 'model_request_failed_error', message: NO_MODEL, retry_status: { type: 'exhausted' } } })
      this.idle({ type: 'retries_exhausted' })
      return false
    }
    // The request starts while its span event is still being stored: the chain keeps every event in order.
    const start = this.emit('span.model_request_start', {})
    const preview = (type: 'event_start' | 'event_delta', payload: unknown, of: string) => this.appends.enqueue(async () => this.log.notify(type, payload, of))
    let res: ModelResponse
    stats.modelRequests++
    try {
      res = await streamModel(model, this.params(), signal, preview, () => newId('sevt'))
    } catch (err) {
      const f = classifyFailure(err, model.endpoint)
      this.emit('span.model_request_end', { model_request_start_id: start.id, is_error: true, model_usage: ZERO_USAGE })
      if (f.kind === 'aborted') return false
      const policy = this.deps.modelRetry
      const retry = f.kind === 'retryable' && this.attempts + 1 < policy.maximumAttempts
      this.deps.ctx.log.warn(
        { session: this.id, rid: this.turnRid, endpoint: model.endpoint, error_type: f.type, attempt: this.attempts + 1, retrying: retry },
        f.message,
      )
      this.emit('session.error', { error: { type: f.type, message: f.message, retry_status: { type: retry ? 'retrying' : 'exhausted' } } })
      if (!retry) {
        this.attempts = 0
        this.idle({ type: 'retries_exhausted' })
        return false
      }
      const wait = (f.kind === 'retryable' && f.retryAfterMs) || intervalAfter(policy, this.attempts + 1)
      this.attempts++
      this.emit('session.status_rescheduled', {})
      void this.persist()
      if (!(await sleep(wait, signal))) return false
      this.emit('session.status_running', {})
      return true
    }
    this.attempts = 0
    stats.inputTokens += res.usage.input_tokens ?? 0
    stats.outputTokens += res.usage.output_tokens ?? 0
    const agent = this.h.session.agent
    for (const o of res.outputs) {
      if (o.type === 'agent.thinking') this.emit('agent.thinking', {}, o.id)
      else if (o.type === 'agent.message') this.emit('agent.message', { content: o.content }, o.id)
      else {
        stats.toolUses++
        const route = routeTool(agent, o.name)
        if (route.kind === 'custom') this.emit('agent.custom_tool_use', { name: o.name, input: o.input })
        else {
          const perm = route.kind === 'builtin' && this.h.rec.env.type === 'cloud' ? permissionFields(route.policy) : {}
          this.emit('agent.tool_use', { name: o.name, input: o.input, ...perm })
        }
      }
    }
    this.emit('span.model_request_end', { model_request_start_id: start.id, is_error: false, model_usage: wireModelUsage(res.usage) })
    this.lastStop = res.stopReason === 'refusal' ? { reason: { type: 'refusal' }, details: { type: 'refusal', category: null, explanation: null } } : undefined
    return true
  }

  private params(): MessageCreateParamsStreaming {
    const agent = this.h.session.agent
    const m = agent.model
    const tools = toolDefinitions(agent)
    return {
      model: m.id,
      max_tokens: this.deps.settings.maxTokens,
      messages: this.h.messages,
      stream: true,
      ...(agent.system ? { system: agent.system } : {}),
      ...(tools.length ? { tools } : {}),
      ...(m.speed ? { speed: m.speed } : {}),
      ...(m.inference_geo ? { inference_geo: m.inference_geo } : {}),
      ...(m.effort ? { output_config: { effort: m.effort.type } } : {}),
    } as MessageCreateParamsStreaming
  }

  // ------------------------------------------------------------------------------------------- plumbing

  private idle(stop: StopReason, details: unknown = null): void {
    const started = this.turnStats?.startedAt ?? this.h.rec.running_since
    this.emit('session.status_idle', { stop_reason: stop, stop_details: details })
    void this.persist()
    const s = this.turnStats ?? newTurnStats()
    this.turnStats = undefined
    this.deps.ctx.log.info(
      {
        session: this.id,
        rid: this.turnRid,
        stop_reason: stop.type,
        duration_ms: started === null ? null : Date.now() - started,
        input_tokens: s.inputTokens,
        output_tokens: s.outputTokens,
        model_requests: s.modelRequests,
        tool_uses: s.toolUses,
      },
      'turn ended',
    )
  }

  /**
   * A service event: applied to the History now, appended behind every earlier write (with the events emitted
   * right after it, as one message: appends.ts). The actor's work runs ahead of the stream by at most the queue; a
   * failed append ends the actor, which is then rebuilt from what was stored, so nothing it did on top of an
   * unstored event survives.
   */
  private emit(type: string, fields: Record<string, unknown>, id = newId('sevt')): SessionEvent {
    const ev = { type, id, ...fields, processed_at: now() } as SessionEvent
    const carried = this.handledIds.splice(0)
    this.h.apply(ev)
    this.appends.event(ev, carried)
    return ev
  }

  /**
   * Marks client events handled: they join the conversation now, and the next stored event carries their ids
   * (one append fewer on the way to the model); `flushHandled` stores them alone when nothing follows.
   */
  private processed(ids: string[]): void {
    this.h.handled(ids)
    this.handledIds.push(...ids)
  }

  private flushHandled(): void {
    if (!this.handledIds.length) return
    const rec = { type: '_processed', ids: this.handledIds.splice(0), processed_at: now() }
    this.appends.enqueue(() => this.log.append(rec))
  }

  /** The record follows the history: written at status changes, updates and archive, once they are stored. */
  private persist(): Promise<void> {
    // This write says more than the running record still due would: that one is dropped.
    clearTimeout(this.runningRecord)
    this.runningRecord = undefined
    return this.mb.persist(async () => {
      const rec = this.h.rec
      const totals = this.h.liveTotals()
      rec.session.usage = toWireUsage(totals)
      rec.session.stats = statsOf(rec.session, totals)
      await this.stored.write(rec)
    })
  }

  private workdir() {
    return path.join(this.deps.ctx.settings.dataDir, 'sessions', this.id)
  }

  private sandboxFor(): Sandbox {
    return (this.sandbox ??= createHostSandbox({ workdir: this.workdir() }))
  }
}

interface TurnStats {
  startedAt: number
  modelRequests: number
  toolUses: number
  inputTokens: number
  outputTokens: number
}

const newTurnStats = (): TurnStats => ({ startedAt: Date.now(), modelRequests: 0, toolUses: 0, inputTokens: 0, outputTokens: 0 })

// ------------------------------------------------------------------------------------------------- views

export function statsOf(s: Session, totals: UsageTotals) {
  const end = s.archived_at ? Date.parse(s.archived_at) : Date.now()
  return { active_seconds: totals.active_ms / 1000, duration_seconds: Math.max(0, end - Date.parse(s.created_at)) / 1000 }
}

/** The wire view: archived sessions report `terminated` (DECISIONS.md). */
export function viewOf(rec: SessionRecord, totals: UsageTotals): Session {
  const s = rec.session
  return {
    ...s,
    status: s.archived_at ? 'terminated' : s.status,
    usage: toWireUsage(totals),
    stats: statsOf(s, totals),
  }
}

function wireModelUsage(u: ModelUsage) {
  return {
    input_tokens: u.input_tokens ?? 0,
    output_tokens: u.output_tokens ?? 0,
    cache_creation_input_tokens: u.cache_creation_input_tokens ?? 0,
    cache_read_input_tokens: u.cache_read_input_tokens ?? 0,
    speed: u.speed ?? null,
    ...(u.cache_creation ? { cache_creation: u.cache_creation } : {}),
    ...(u.server_tool_use ? { server_tool_use: u.server_tool_use } : {}),
  }
}

/** Resolves true after `ms`, false at once if the signal aborts first. */
function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false)
  return new Promise((resolve) => {
    const t = setTimeout(() => {
      signal.removeEventListener('abort', onAbort)
      resolve(true)
    }, ms)
    const onAbort = () => {
      clearTimeout(t)
      resolve(false)
    }
    signal.addEventListener('abort', onAbort, { once: true })
  })
}
