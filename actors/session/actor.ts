import path from 'node:path'
import { rm } from 'node:fs/promises'
import type Anthropic from '@anthropic-ai/sdk'
import type { MessageCreateParamsStreaming } from '@anthropic-ai/sdk/resources/messages'
import type { KV } from '@nats-io/kv'
import { conflict, unavailable } from '../../protocol/errors.js'
import type { SessionEvent, StopReason } from '../../protocol/events.js'
import { newId } from '../../protocol/ids.js'
import type { Session } from '../../protocol/session.js'
import { actorSubject } from '../../protocol/subjects.js'
import { now } from '../../protocol/time.js'
import { budgetReached, emptyUsage, toWireUsage, type ModelUsage, type UsageTotals } from '../../protocol/usage.js'
import { createHostSandbox, type Sandbox } from '../../sandbox/index.js'
import type { RecordStore } from '../kit/store.js'
import type { HostContext } from '../kit/types.js'
import { History } from './history.js'
import { EventLog, FenceLost, lastSequence, purgeSession, readSession } from './log.js'
import { classifyFailure, streamModel, type ModelResponse } from './model.js'
import { sessionKey, workKey, type SessionRecord } from './state.js'
import { permissionFields, routeTool, toolDefinitions } from './tools.js'

export interface SessionSettings {
  /** Retries of a failed model request before the turn gives up (retries_exhausted). */
  retries: number
  /** First backoff pause; doubles per attempt up to 30 s, unless the provider says when to come back. */
  retryBaseMs: number
  /** An idle session actor leaves memory after this long without work (its state is in KV and the stream). */
  idleMs: number
  /** max_tokens of each model request. */
  maxTokens: number
}

export interface ActorDeps {
  ctx: HostContext
  store: RecordStore<SessionRecord>
  kv: KV
  /** Undefined when neither a model base URL nor a key is configured: turns end with a session.error. */
  model: Anthropic | undefined
  settings: SessionSettings
  /** Called when the actor lost its fence (another host owns the session now) or was deleted. */
  gone(actor: SessionActor): void
}

const ZERO_USAGE = { input_tokens: 0, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, speed: null }
const NOT_RERUN = 'The host running this tool stopped before the tool finished. It was not run again, so that it never runs twice; run it again if that is safe.'
const NO_MODEL = 'No model endpoint is configured on this server: set TROUPE_MODEL_BASE_URL (and ANTHROPIC_API_KEY when the endpoint needs one) on the serving hosts.'

const isResult = (e: SessionEvent) =>
  e.type === 'user.tool_result' || e.type === 'user.custom_tool_result' || e.type === 'user.tool_confirmation'

/**
 * One session, alive on the host that owns its partition. It is a mailbox: client events are stored first
 * (durable before the POST answers), then handled one thing at a time, in order, by `pump`. Every change is
 * an appended event, applied to the History in the same step, so the actor's memory is always exactly
 * "the stored events, applied"; that is also how a new host rebuilds it after a takeover.
 */
export class SessionActor {
  private chain: Promise<unknown> = Promise.resolve()
  private persisting: Promise<void> = Promise.resolve()
  private turn: AbortController | undefined
  private pumping: Promise<void> | undefined
  private sandbox: Sandbox | undefined
  private workMarked = false
  private recovering = false
  private resume = false
  /** kick() came while the pump was running: the pump runs once more when it ends. */
  private kickedWhilePumping = false
  private lastStop: { reason: StopReason; details: unknown } | undefined
  private attempts = 0
  /** Client events handled whose ids the next stored event carries. */
  private readonly handledIds: string[] = []
  dead = false
  lastActive = Date.now()

  private constructor(
    private readonly deps: ActorDeps,
    readonly h: History,
    readonly log: EventLog,
    private revision: number,
  ) {}

  get id() {
    return this.h.session.id
  }

  /** Rebuilds a session from its record and its history; undefined when it does not exist. */
  static async load(deps: ActorDeps, id: string): Promise<SessionActor | undefined> {
    const cur = await deps.store.get(sessionKey(id))
    if (!cur) return undefined
    const rec = cur.value
    // The record holds the latest snapshot; replay re-derives what the events say from a clean start.
    rec.totals = emptyUsage()
    rec.running_since = null
    rec.session.status = 'idle'
    const h = new History(rec)
    const last = await lastSequence(deps.ctx.jsm, id)
    await readSession(deps.ctx.js, id, last, (r) => h.apply(r.event, r.processed))
    const actor = new SessionActor(deps, h, new EventLog(deps.ctx.js, deps.ctx.nc, id, last), cur.revision)
    actor.recovering = h.status === 'running' || h.status === 'rescheduling'
    actor.workMarked = actor.recovering
    return actor
  }

  /** A session that was just stored by create (its history is empty). */
  static fresh(deps: ActorDeps, rec: SessionRecord, revision: number): SessionActor {
    return new SessionActor(deps, new History(rec), new EventLog(deps.ctx.js, deps.ctx.nc, rec.session.id, 0), revision)
  }

  /** True while the actor has something to do or a reason to stay (a live shell). */
  get busy(): boolean {
    return !!this.pumping || this.h.status === 'running' || this.h.status === 'rescheduling' || this.h.pending.size > 0
  }

  get hasSandbox(): boolean {
    return !!this.sandbox
  }

  // ----------------------------------------------------------------------------------------------- views

  view(): Session {
    return viewOf(this.h.rec, this.h.liveTotals())
  }

  // ------------------------------------------------------------------------------------------ operations

  /** Stores client events (validated by the caller against this actor's state), then lets the mailbox run. */
  async accept(events: SessionEvent[]): Promise<void> {
    this.alive()
    const stored = this.write(async () => {
      // Checked again in order with the other appends: an archive that got in first wins.
      if (this.h.session.archived_at) return false
      for (const e of events) {
        await this.log.append(e, e.id)
        this.h.apply(e)
      }
      return true
    })
    // The work marker goes down beside the append: both are in place before the POST answers.
    const [ok] = await Promise.all([stored, events.some((e) => e.type !== 'user.interrupt') ? this.markWork() : undefined])
    if (!ok) throw conflict(`Session ${this.id} is archived; it accepts no more events`, 'session_archived')
    // An interrupt acts at once: the running turn stops at its next step, and the mailbox handles the rest.
    if (events.some((e) => e.type === 'user.interrupt')) this.turn?.abort()
    this.kick()
  }

  /** Records a service event and waits until it is stored (updates and archive answer only then). */
  async record(type: string, fields: Record<string, unknown>): Promise<SessionEvent> {
    this.alive()
    const ev = this.emit(type, fields)
    await this.chain
    this.alive()
    return ev
  }

  /** The budget moved: a turn paused at the ceiling gets another look. */
  async resumeIfPaused(): Promise<void> {
    if (this.h.turnOpen && this.h.stopReason?.type === 'budget_reached') {
      this.resume = true
      await this.markWork()
      this.kick()
    }
  }

  /** Writes the record now (after updates, archive). */
  async save(): Promise<void> {
    await this.persist()
    this.alive()
  }

  /** The last stored sequence once every append already under way has been acknowledged. */
  async settledSeq(): Promise<number> {
    await this.chain
    return this.log.lastSeq
  }

  isRunning() {
    return this.h.status === 'running' || this.h.status === 'rescheduling'
  }

  /** Delete: the record goes first (the session is gone for readers), then its history, workdir and reference. */
  async destroy(): Promise<void> {
    this.alive()
    if (this.isRunning()) throw conflict(`Session ${this.id} is running; interrupt it first (send user.interrupt)`, 'session_running')
    const { ctx } = this.deps
    this.dead = true
    this.turn?.abort()
    await this.chain
    await this.persisting
    if (!(await this.deps.store.delete(sessionKey(this.id), this.revision))) {
      this.deps.gone(this)
      throw unavailable('The session moved to another host while being deleted; retry', 500)
    }
    this.log.notify('session.deleted', { type: 'session.deleted', id: newId('sevt'), processed_at: now() })
    // delete, not purge: see unmarkWork
    await this.deps.kv.delete(workKey(this.id)).catch(() => undefined)
    await purgeSession(ctx.jsm, this.id)
    await ctx.ask(actorSubject('environment', 'release'), { op: 'release', params: { environment_id: this.h.session.environment_id }, query: {}, body: {} })
      .catch((err) => ctx.log.warn({ err, session: this.id }, 'environment reference not released'))
    await this.sandbox?.close()
    await rm(this.workdir(), { recursive: true, force: true }).catch(() => undefined)
    this.deps.gone(this)
  }

  /** Stops everything without writing (partition given away, host stopping). */
  async shutdown(): Promise<void> {
    this.dead = true
    this.turn?.abort()
    await this.pumping?.catch(() => undefined)
    await this.sandbox?.close()
  }

  /** Leaves memory: only when there is nothing to do. */
  async passivate(): Promise<boolean> {
    if (this.busy) return false
    await this.persisting
    // Work may have arrived while the record was being written.
    if (this.busy || this.dead) return false
    this.dead = true
    await this.sandbox?.close()
    return true
  }

  kick(): void {
    this.lastActive = Date.now()
    if (this.dead) return
    if (this.pumping) {
      // The running pump may already have taken its last look at the mailbox (it is finishing): look again after it.
      this.kickedWhilePumping = true
      return
    }
    this.kickedWhilePumping = false
    this.pumping = this.pump()
      .catch((err) => this.failed(err))
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
      if (this.resume || pending.some((e) => e.type !== 'user.interrupt')) await this.markWork()
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
      // Nothing left: once everything is stored, the session no longer needs resuming elsewhere.
      this.flushHandled()
      await this.chain
      if (this.dead || this.h.pending.size > 0) continue
      await this.unmarkWork()
      return
    }
  }

  /** A takeover: the previous host died mid-turn. Close what it left open, then carry on with the turn. */
  private async recover(): Promise<void> {
    this.emit('session.status_rescheduled', {})
    if (this.h.openSpan) {
      this.emit('span.model_request_end', { model_request_start_id: this.h.openSpan, is_error: true, model_usage: ZERO_USAGE })
    }
    for (const t of [...this.h.open.values()]) {
      if (t.kind === 'builtin' && (!t.ask || t.confirmation?.result === 'allow')) {
        this.emit('agent.tool_result', { tool_use_id: t.eventId, content: [{ type: 'text', text: NOT_RERUN }], is_error: true })
      }
    }
    await this.runTurn()
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
        this.emit('session.status_running', {})
        void this.persist()
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
      const result = await this.sandboxFor().run(t.name, t.input, signal)
      // An interrupted run still gets its result (the sandbox says it was interrupted); then the turn stops.
      this.emit('agent.tool_result', { tool_use_id: t.eventId, content: result.content, is_error: result.is_error })
      if (signal.aborted) return
    }
  }

  /** One model request with its retries. False when the turn ended (exhausted, failed or interrupted). */
  private async modelRequest(signal: AbortSignal): Promise<boolean> {
    const client = this.deps.model
    if (!client) {
      this.emit('session.error', { error: { type: 'model_request_failed_error', message: NO_MODEL, retry_status: { type: 'exhausted' } } })
      this.idle({ type: 'retries_exhausted' })
      return false
    }
    // The request starts while its span event is still being stored: the chain keeps every event in order.
    const start = this.emit('span.model_request_start', {})
    const preview = (type: 'event_start' | 'event_delta', payload: unknown, of: string) => this.enqueue(async () => this.log.notify(type, payload, of))
    let res: ModelResponse
    try {
      res = await streamModel(client, this.params(), signal, preview, () => newId('sevt'))
    } catch (err) {
      const f = classifyFailure(err)
      this.emit('span.model_request_end', { model_request_start_id: start.id, is_error: true, model_usage: ZERO_USAGE })
      if (f.kind === 'aborted') return false
      const retry = f.kind === 'retryable' && this.attempts < this.deps.settings.retries
      this.emit('session.error', { error: { type: f.type, message: f.message, retry_status: { type: retry ? 'retrying' : 'exhausted' } } })
      if (!retry) {
        this.attempts = 0
        this.idle({ type: 'retries_exhausted' })
        return false
      }
      const wait = (f.kind === 'retryable' && f.retryAfterMs) || Math.min(30_000, this.deps.settings.retryBaseMs * 2 ** this.attempts)
      this.attempts++
      this.emit('session.status_rescheduled', {})
      void this.persist()
      if (!(await sleep(wait, signal))) return false
      this.emit('session.status_running', {})
      return true
    }
    this.attempts = 0
    const agent = this.h.session.agent
    for (const o of res.outputs) {
      if (o.type === 'agent.thinking') this.emit('agent.thinking', {}, o.id)
      else if (o.type === 'agent.message') this.emit('agent.message', { content: o.content }, o.id)
      else {
        const route = routeTool(agent, o.name)
        if (route.kind === 'custom') this.emit('agent.custom_tool_use', { name: o.name, input: o.input })
        else {
          const perm = route.kind === 'builtin' && this.h.rec.env.type === 'cloud' ? permissionFields(route.policy) : {}
          this.emit('agent.tool_use', { name: o.name, input: o.input, ...perm })
        }
      }
    }
    this.emit('span.model_request_end', { model_request_start_id: start.id, is_error: false, model_usage: wireModelUsage(res.usage) })
    this.lastStop = res.stopReason === 'refusal'
      ? { reason: { type: 'refusal' }, details: { type: 'refusal', category: null, explanation: null } }
      : undefined
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
    this.emit('session.status_idle', { stop_reason: stop, stop_details: details })
    void this.persist()
  }

  /**
   * A service event: applied to the History now, appended behind every earlier write. The actor's work runs
   * ahead of the stream by at most the queue; a failed append ends the actor, which is then rebuilt from
   * what was stored, so nothing it did on top of an unstored event survives.
   */
  private emit(type: string, fields: Record<string, unknown>, id = newId('sevt')): SessionEvent {
    const ev = { type, id, ...fields, processed_at: now() } as SessionEvent
    const carried = this.handledIds.splice(0)
    this.h.apply(ev)
    this.enqueue(() => this.log.append(ev, id, carried))
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
    this.enqueue(() => this.log.append(rec))
  }

  /** A write nobody waits for: its failure is handled by the chain (the actor steps down). */
  private enqueue(fn: () => Promise<unknown>): void {
    this.write(fn).catch(() => undefined)
  }

  /** Writes one at a time, in order: each append names the sequence the previous one got. */
  private write<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.chain.then(() => {
      this.alive()
      return fn()
    })
    this.chain = run.then(() => undefined, (err) => this.failed(err))
    return run
  }

  /** The record follows the history: written at status changes, updates and archive, once they are stored. */
  private persist(): Promise<void> {
    this.persisting = this.persisting.then(() => this.chain).then(async () => {
      if (this.dead) return
      const rec = this.h.rec
      const totals = this.h.liveTotals()
      rec.session.usage = toWireUsage(totals)
      rec.session.stats = statsOf(rec.session, totals)
      const rev = await this.deps.store.update(sessionKey(this.id), rec, this.revision)
      if (rev === false) throw new FenceLost(`session ${this.id} record moved on without us`)
      this.revision = rev
    }).catch((err) => this.failed(err))
    return this.persisting
  }

  private async markWork() {
    if (this.workMarked) return
    await this.deps.kv.put(workKey(this.id), new Uint8Array())
    this.workMarked = true
  }

  private async unmarkWork() {
    if (!this.workMarked) return
    this.workMarked = false
    // A delete marker, not a purge: on nats-server 2.9 a KV purge (a subject rollup) that races a write to another
    // key makes push consumers (the sessions projection's watch) skip that write, so lists showed a stale status.
    await this.deps.kv.delete(workKey(this.id)).catch(() => undefined)
  }

  private alive() {
    if (this.dead) throw unavailable('This session is moving to another host; retry shortly', 500)
  }

  private failed(err: unknown) {
    if (this.dead) return
    if (err instanceof FenceLost) {
      this.deps.ctx.log.warn({ session: this.id, err: err.message }, 'session fence lost; stepping down')
    } else {
      this.deps.ctx.log.error({ session: this.id, err }, 'session actor failed; it will be rebuilt from its history')
    }
    this.dead = true
    this.turn?.abort()
    void this.sandbox?.close()
    this.deps.gone(this)
  }

  private workdir() {
    return path.join(this.deps.ctx.settings.dataDir, 'sessions', this.id)
  }

  private sandboxFor(): Sandbox {
    return (this.sandbox ??= createHostSandbox({ workdir: this.workdir() }))
  }
}

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

