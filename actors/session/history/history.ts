import type { ContentBlockParam, MessageParam, ToolResultBlockParam } from '@anthropic-ai/sdk/resources/messages'
import { PROCESSED, type ProcessedRecord, type RequestTag, type SessionStatus, type StopReason } from '../../../protocol/events.js'
import type { ByType, ClientEvent, EventOf, IdleFields, SessionEvent } from '../../../protocol/session-events.js'
import { handle, type HandlerMap } from '../../kit/index.js'
import { RequestLog } from './requests.js'
import type { OutcomeEvaluation } from '../../../protocol/session.js'
import { DEFAULT_MAX_ITERATIONS, eventTime, evaluationOf, type OpenOutcome, outcomeBrief, revisionNote } from './outcomes.js'
import { SKILL_TOOL, type SkillActivation } from './skill-launches.js'
import { addActiveMs, addModelUsage, combineUsage, type ModelUsage, type UsageTotals } from '../billing/index.js'
import type { SessionRecord, SessionSkill } from './state.js'
import type { OpenTool, ToolOutcome } from './open-tool.js'
import { pairedServerBlocks, serverToolResult, serverToolUse } from './server-tools.js'

const INTERRUPTED = 'The tool use was abandoned: the session moved on before a result arrived.'

/** What a history applies: the stored events, and the records marking client events handled. */
type Applied = SessionEvent | ProcessedRecord

/** The handler of a type the history does not depend on. */
const NOTHING = () => undefined

/** When a service event happened: its part in the status changes and clocks. */
type Stamped = { processed_at: string }

const time = (ev: Stamped) => (ev.processed_at ? Date.parse(ev.processed_at) : Date.now())

/**
 * Everything a session actor knows, rebuilt by applying its stored events in order: the same code runs for
 * a live event and for a replay after a takeover, so both always agree. It keeps the provider conversation
 * (user and assistant turns as the Messages API wants them), the client events still waiting in the
 * mailbox, the tool uses waiting for results, the status and usage, and the record's mutable fields.
 */
export class History {
  status: SessionStatus
  stopReason: StopReason | null = null
  readonly messages: MessageParam[] = []
  /** Client events stored but not yet handled, in arrival order. */
  readonly pending = new Map<string, ClientEvent>()
  /** Tool uses of the last model response still without a result, in order. */
  readonly open = new Map<string, OpenTool>()
  /** The POSTs that stored client events, for answering their retries. */
  readonly requests = new RequestLog()
  /** A turn is in progress: running, or idle waiting for tool results or a budget raise. */
  turnOpen = false
  /** The outcome the agent works toward (outcomes.ts), while one is open; its evaluations are the session's. */
  outcome: OpenOutcome | undefined
  /** The grader pass the open outcome is at (0-based). */
  outcomeIteration = 0
  /** A grader pass's span start without its end (its host died grading: the next runs it again under it). */
  gradingSpan: string | null = null
  /** The session's successful `Skill` launches, in order (skill-context.ts injects their SKILL.md at request time). */
  readonly activations: SkillActivation[] = []
  /** The conversation's MCP tool uses by id: each request names them as it offers their tools (turn/mcp-tools.ts). */
  readonly mcpUses = new Map<string, { server: string; name: string }>()
  /** A span.model_request_start without its end (a request was in flight when its host died). */
  openSpan: string | null = null
  private draft: ContentBlockParam[] | null = null
  /**
   * The session's child threads' histories (threads.ts), by thread id, for a primary history: client events it
   * handles that belong to one (a result for its tool use, an interrupt naming it) are handed to it.
   */
  readonly children = new Map<string, History>()

  /**
   * `thread`: a child thread's history (its id), whose status events are `session.thread_status_*` and whose input is
   * the message its parent sent (`agent.thread_message_received`); omitted for the primary.
   */
  constructor(
    readonly rec: SessionRecord,
    readonly thread?: string,
  ) {
    this.status = rec.session.status
  }

  get session() {
    return this.rec.session
  }

  /**
   * The skills this thread runs. A child's record holds its own (threads.ts); the primary's holds every thread's (what
   * the sandbox mounts), the primary's own those no member scopes.
   */
  get skills(): SessionSkill[] {
    const all = this.rec.skills ?? []
    return this.thread ? all : all.filter((s) => s.member === undefined)
  }

  /** A turn runs: its model request, its tools, or the pause before it retries a model request. */
  get running(): boolean {
    return this.status === 'running' || this.status === 'rescheduling'
  }

  /** Applies one stored record, after the client events it marks as handled (`processed`); `request`: the POST that stored it. */
  apply(ev: Applied, processed?: readonly string[], request?: RequestTag): void {
    if (processed) this.handled(processed)
    if (request && ev.type !== PROCESSED) this.requests.note(request, ev.id)
    handle(this.applies, ev.type, ev)
  }

  /** What each type of stored record does to the history. */
  private readonly applies: HandlerMap<ByType<Applied>> = {
    _processed: (r) => this.handled(r.ids),
    // A client event waits in the mailbox until handled (`consumes`); an outcome is listed from the moment it is stored.
    'user.message': (e) => this.pending.set(e.id, e),
    'user.interrupt': (e) => this.pending.set(e.id, e),
    'user.tool_confirmation': (e) => this.pending.set(e.id, e),
    'user.custom_tool_result': (e) => this.pending.set(e.id, e),
    'user.tool_result': (e) => this.pending.set(e.id, e),
    'system.message': (e) => this.pending.set(e.id, e),
    'user.define_outcome': (e) => {
      this.pending.set(e.id, e)
      this.evaluations.push(evaluationOf(e))
    },
    'agent.message': (ev) => this.draftBlocks().push(...ev.content.flatMap((c) => (c.type === 'text' ? [{ type: 'text' as const, text: c.text }] : []))),
    // A web tool's use and result (turn/web-tools.ts) are the model's own response: assistant blocks, as the provider sent them.
    'agent.tool_use': (ev) =>
      ev.server_tool_use_id === undefined
        ? this.toolUse(ev, this.rec.env.type === 'self_hosted' ? 'client' : 'builtin', ev.evaluated_permission === 'ask')
        : this.draftBlocks().push(serverToolUse(ev.server_tool_use_id, ev.name, ev.input)),
    'agent.custom_tool_use': (ev) => this.toolUse(ev, 'custom', false),
    'agent.tool_result': (ev) =>
      ev.server_tool_result === undefined ? this.resolve(ev.tool_use_id, ev) : this.draftBlocks().push(serverToolResult(ev.server_tool_result)),
    'agent.mcp_tool_use': (ev) => this.toolUse(ev, 'mcp', ev.evaluated_permission === 'ask'),
    'agent.mcp_tool_result': (ev) => this.resolve(ev.mcp_tool_use_id, ev),
    'agent.thread_message_received': (ev) => {
      // A child's input: the message its parent sent. (On the primary, a child's reply: its send's result says it.)
      if (!this.thread) return
      this.abandonOpen()
      this.pushUser(ev.content)
    },
    'span.model_request_start': (ev) => {
      this.draft = []
      this.openSpan = ev.id
    },
    'span.model_request_end': (ev) => {
      const blocks = this.draft
      this.draft = null
      this.openSpan = null
      // A failed request's partial output is dropped, unless it holds a stored tool use: a request closed as an
      // error after a takeover had its tool uses stored, and their results (an error, or the client's) follow,
      // so the conversation must hold them (a result without its tool use is refused by the Messages API).
      const keep = blocks?.length && (!ev.is_error || blocks.some((b) => b.type === 'tool_use'))
      // A web tool's use whose result was never stored (its host died between them) is left out of a failed request's.
      if (keep) this.messages.push({ role: 'assistant', content: ev.is_error ? pairedServerBlocks(blocks) : blocks })
      this.spent(ev.model_usage)
    },
    'span.outcome_evaluation_start': (ev) => {
      this.gradingSpan = ev.id
      this.outcomeIteration = ev.iteration
      this.evaluation(ev.outcome_id, (x) => ({ ...x, result: 'evaluating', iteration: ev.iteration }))
    },
    'span.outcome_evaluation_end': (ev) => {
      this.gradingSpan = null
      this.spent(ev.usage)
      const o = this.outcome
      const { explanation, result } = ev
      if (result !== 'needs_revision') {
        this.evaluation(ev.outcome_id, (x) => ({ ...x, result, explanation, completed_at: ev.processed_at }))
        this.outcome = undefined
      } else if (o) {
        // The agent works on, with the grader's explanation as its input.
        this.outcomeIteration++
        this.evaluation(o.id, (x) => ({ ...x, result: 'running', iteration: this.outcomeIteration, explanation }))
        this.pushUser([{ type: 'text', text: revisionNote(explanation, this.outcomeIteration - 1, o.max) }])
      }
    },
    'session.status_running': (ev) => this.own(ev, this.toRunning),
    'session.status_rescheduled': (ev) => this.own(ev, this.toRescheduling),
    'session.status_idle': (ev) => this.own(ev, this.toIdle),
    'session.status_terminated': (ev) => this.own(ev, this.toTerminated),
    'session.thread_status_running': (ev) => this.child(ev, this.toRunning),
    'session.thread_status_rescheduled': (ev) => this.child(ev, this.toRescheduling),
    'session.thread_status_idle': (ev) => this.child(ev, this.toIdle),
    'session.thread_status_terminated': (ev) => this.child(ev, this.toTerminated),
    'session.updated': (ev) => this.own(ev, this.applyUpdate),
    // What the history does not depend on: the model's thinking, sends seen from the sender, child threads (the actor
    // makes their histories), errors (a status follows), usage reports (the spans carry the usage) and heartbeats.
    'agent.thinking': NOTHING,
    'agent.thread_message_sent': NOTHING,
    'session.thread_created': NOTHING,
    'session.error': NOTHING,
    'session.usage': NOTHING,
    'span.outcome_evaluation_ongoing': NOTHING,
  }

  /** A span's usage joins the totals (a record without one, as a hand-written one may be, adds nothing). */
  private spent(usage: ModelUsage | undefined) {
    if (usage) this.rec.totals = addModelUsage(this.rec.totals, this.session.agent.model.id, usage)
  }

  private toolUse(ev: EventOf<'agent.tool_use' | 'agent.custom_tool_use' | 'agent.mcp_tool_use'>, kind: OpenTool['kind'], ask: boolean) {
    // A child thread's tool use copied to the primary's subject for the session's stream: its own history has it.
    if (!this.thread && 'session_thread_id' in ev) return
    const { id, name, input } = ev
    const server = ev.type === 'agent.mcp_tool_use' ? ev.mcp_server_name : undefined
    this.draftBlocks().push({ type: 'tool_use', id, name, input })
    if (server !== undefined) this.mcpUses.set(id, { server, name })
    this.open.set(id, { eventId: id, kind, name, input, ask, ...(server !== undefined ? { server } : {}) })
  }

  /** A change of the session's (its status, an update): it is also when the session was last updated. */
  private own<E extends Stamped>(ev: E, change: (ev: E) => void) {
    change(ev)
    this.session.updated_at = ev.processed_at
  }

  /** A child thread's status: its own history's status; the primary's history holds copies, for the session's stream. */
  private child<E extends Stamped>(ev: E, change: (ev: E) => void) {
    if (this.thread) change(ev)
  }

  // The status changes, the session's and a child's: fields, so that `own` and `child` can be handed them.
  private readonly toRunning = (ev: Stamped) => {
    this.setStatus('running')
    this.turnOpen = true
    this.rec.running_since ??= time(ev)
  }

  private readonly toRescheduling = (ev: Stamped) => {
    this.setStatus('rescheduling')
    this.rec.running_since ??= time(ev)
  }

  private readonly toIdle = (ev: Stamped & IdleFields) => {
    this.setStatus('idle')
    this.stopClock(time(ev))
    this.stopReason = ev.stop_reason
    this.turnOpen = this.stopReason.type === 'requires_action' || this.stopReason.type === 'budget_reached'
  }

  private readonly toTerminated = (ev: Stamped) => {
    // Archiving is this event: a replay that never saw the record written after it still knows.
    this.session.archived_at ??= ev.processed_at
    this.setStatus('terminated')
    this.stopClock(time(ev))
    this.turnOpen = false
  }

  /** Client events leave the mailbox, in the order given. */
  handled(ids: readonly string[]): void {
    for (const id of ids) {
      const e = this.pending.get(id)
      if (!e) continue
      this.pending.delete(id)
      handle(this.consumes, e.type, e)
    }
  }

  /**
   * The session's usage as stored: this thread's, and its children's tokens (a session's runtime is its primary's
   * running time: children run only inside its turns, so their time is counted once, there).
   */
  allTotals(): UsageTotals {
    if (!this.children.size) return this.rec.totals
    return combineUsage([this.rec.totals, ...[...this.children.values()].map((c) => c.rec.totals)], this.rec.totals.active_ms)
  }

  /** The usage totals including the running stretch so far (list cost counts active time as it passes). */
  liveTotals(now = Date.now()) {
    const since = this.rec.running_since
    const totals = this.allTotals()
    return since === null ? totals : addActiveMs(totals, Math.max(0, now - since))
  }

  /** What the next step of an open turn is, judged from the conversation alone. */
  needsModel(): boolean {
    const last = this.messages[this.messages.length - 1]
    return !!last && last.role === 'user'
  }

  private setStatus(s: SessionStatus) {
    this.status = s
    this.session.status = s
  }

  private stopClock(at: number) {
    const since = this.rec.running_since
    if (since !== null) this.rec.totals = addActiveMs(this.rec.totals, Math.max(0, at - since))
    this.rec.running_since = null
  }

  private draftBlocks() {
    return (this.draft ??= [])
  }

  /** What each type of client event does when it leaves the mailbox: it now takes part in the conversation. */
  private readonly consumes: HandlerMap<ByType<ClientEvent>> = {
    'user.message': (e) => {
      this.abandonOpen()
      this.pushUser(e.content)
    },
    'user.define_outcome': (e) => {
      // The goal becomes the agent's input; its turn's end is graded against the rubric (outcomes.ts).
      const rubric = e.rubric.type === 'text' ? e.rubric.content : ''
      this.outcome = { id: e.outcome_id, description: e.description, rubric, max: e.max_iterations ?? DEFAULT_MAX_ITERATIONS }
      this.outcomeIteration = 0
      this.evaluation(this.outcome.id, (x) => ({ ...x, result: 'running' }))
      this.abandonOpen()
      this.pushUser([{ type: 'text', text: outcomeBrief(this.outcome) }])
    },
    'system.message': (e) => {
      const text = e.content.map((c) => c.text).join('\n')
      this.pushUser([{ type: 'text', text: `<system-message>\n${text}\n</system-message>` }])
    },
    'user.tool_result': (e) => this.ownerOf(e.tool_use_id).resolve(e.tool_use_id, e),
    'user.custom_tool_result': (e) => this.ownerOf(e.custom_tool_use_id).resolve(e.custom_tool_use_id, e),
    'user.tool_confirmation': (e) => {
      const t = this.ownerOf(e.tool_use_id).open.get(e.tool_use_id)
      if (t) t.confirmation = { result: e.result, deny_message: e.deny_message }
    },
    'user.interrupt': (e) => {
      // Naming a child stops that thread only; otherwise every thread stops (WIRE §7.1).
      const only = e.session_thread_id == null ? undefined : this.children.get(e.session_thread_id)
      for (const h of only ? [only] : [this, ...this.children.values()]) h.interrupted(e)
    },
  }

  /** The thread whose tool use `id` is: this one, or the child that has it open. */
  private ownerOf(id: string): History {
    if (this.open.has(id)) return this
    for (const c of this.children.values()) if (c.open.has(id)) return c
    return this
  }

  /** Open tool use `id` of this thread or of a child: what client events may answer (rules.ts). */
  findOpen(id: string): OpenTool | undefined {
    return this.ownerOf(id).open.get(id)
  }

  private interrupted(at?: EventOf<'user.interrupt'>) {
    this.abandonOpen()
    this.draft = null
    // An outcome being worked on stops with the work (one being graded is closed by its pass: outcomes.ts).
    const o = this.outcome
    if (o && !this.gradingSpan) {
      this.evaluation(o.id, (x) => ({ ...x, result: 'interrupted', completed_at: at ? eventTime(at.id) : null }))
      this.outcome = undefined
    }
  }

  /** The session's outcome evaluations (WIRE §6), one per outcome. */
  get evaluations(): OutcomeEvaluation[] {
    return this.session.outcome_evaluations
  }

  /** Replaces outcome `id`'s evaluation by `fn` of it. */
  private evaluation(id: string, fn: (x: OutcomeEvaluation) => OutcomeEvaluation): void {
    const i = this.evaluations.findIndex((x) => x.outcome_id === id)
    if (i >= 0) this.evaluations[i] = fn(this.evaluations[i]!)
  }

  /** Tool uses left without results get an error result, so the conversation stays valid for the API. */
  private abandonOpen() {
    for (const id of [...this.open.keys()]) this.resolve(id, { is_error: true, content: [{ type: 'text', text: INTERRUPTED }] })
  }

  private resolve(id: string, outcome: ToolOutcome) {
    const t = this.open.get(id)
    if (!t || !this.open.delete(id)) return
    const block: ToolResultBlockParam = {
      type: 'tool_result',
      tool_use_id: id,
      content: outcome.content ?? [],
      ...(outcome.is_error ? { is_error: true } : {}),
    }
    this.pushUser([block])
    if (t.name === SKILL_TOOL && t.kind === 'builtin' && !outcome.is_error && this.skills.length) {
      this.activations.push({ name: String(t.input.skill), message: this.messages.length - 1 })
    }
  }

  private pushUser(blocks: ContentBlockParam[]) {
    const last = this.messages[this.messages.length - 1]
    if (last && last.role === 'user' && Array.isArray(last.content)) last.content.push(...blocks)
    else this.messages.push({ role: 'user', content: [...blocks] })
  }

  /** The keys an update changed (it carries only those). */
  private readonly applyUpdate = (ev: EventOf<'session.updated'>) => {
    const s = this.session
    if (ev.title !== undefined) s.title = ev.title
    if (ev.metadata !== undefined) s.metadata = ev.metadata
    if (ev.agent !== undefined) s.agent = ev.agent
    if (ev.budget !== undefined) {
      s.budget = ev.budget
      if (ev.budget === null) this.rec.budget_removed = true
    }
  }
}
