import type { ContentBlockParam, MessageParam, ToolResultBlockParam } from '@anthropic-ai/sdk/resources/messages'
import type { RequestTag, SessionEvent, SessionStatus, StopReason } from '../../../protocol/events.js'
import { RequestLog } from './requests.js'
import { DEFAULT_MAX_ITERATIONS, eventTime, evaluationOf, type OpenOutcome, type OutcomeEvaluation, outcomeBrief, revisionNote } from './outcomes.js'
import { SKILL_TOOL, type SkillActivation } from './skill-launches.js'
import { addActiveMs, addModelUsage, combineUsage, type ModelUsage, type UsageTotals } from '../billing/index.js'
import type { SessionRecord, SessionSkill } from './state.js'

/** A tool use of the last model response that has no result yet. */
export interface OpenTool {
  eventId: string
  /** builtin: the service runs it; custom: a custom tool; client: any tool of a self-hosted session. */
  kind: 'builtin' | 'custom' | 'client'
  name: string
  input: Record<string, unknown>
  /** Waits for a user.tool_confirmation before it may run (always_ask). */
  ask: boolean
  confirmation?: { result: 'allow' | 'deny'; deny_message?: string | null }
  /**
   * A `send_to_agent` parked on its child thread (threads.ts), set while the turn parks: the child's events the
   * client must answer, or `budget` when the child stopped at the session's budget. Never stored.
   */
  parkedOn?: string[] | 'budget'
}

export interface ToolOutcome {
  content?: unknown[]
  is_error?: boolean | null
}

const INTERRUPTED = 'The tool use was abandoned: the session moved on before a result arrived.'
const CLIENT_EVENT = /^(user\.|system\.)/

const time = (ev: SessionEvent) => (ev.processed_at ? Date.parse(ev.processed_at) : Date.now())

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
  readonly pending = new Map<string, SessionEvent>()
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

  /** Applies one stored event, after the client events it marks as handled (`processed`); `request`: the POST that stored it. */
  apply(ev: SessionEvent, processed?: readonly string[], request?: RequestTag): void {
    if (processed) this.handled(processed)
    if (request) this.requests.note(request, ev.id)
    if (ev.type === '_processed') {
      this.handled((ev as unknown as { ids: string[] }).ids)
      return
    }
    if (CLIENT_EVENT.test(ev.type)) {
      this.pending.set(ev.id, ev)
      if (ev.type === 'user.define_outcome') this.evaluations.push(evaluationOf(ev))
      return
    }
    // A child thread's event copied to the primary's subject for the session's stream: its own history has it.
    if (!this.thread && 'session_thread_id' in ev && ev.type !== 'session.thread_created') return
    switch (this.thread ? ev.type.replace('session.thread_status_', 'session.status_') : ev.type) {
      case 'agent.thread_message_received':
        // A child's input: the message its parent sent. (On the primary, a child's reply: its send's result says it.)
        if (this.thread) {
          this.abandonOpen()
          this.pushUser(ev.content as ContentBlockParam[])
        }
        break
      case 'span.model_request_start':
        this.draft = []
        this.openSpan = ev.id
        break
      case 'agent.message':
        this.draftBlocks().push(
          ...((ev.content as Array<{ type: string; text?: string }>) ?? [])
            .filter((c) => c.type === 'text')
            .map((c) => ({ type: 'text' as const, text: c.text ?? '' })),
        )
        break
      case 'agent.tool_use':
      case 'agent.custom_tool_use': {
        const input = (ev.input ?? {}) as Record<string, unknown>
        const name = String(ev.name)
        this.draftBlocks().push({ type: 'tool_use', id: ev.id, name, input })
        const kind = ev.type === 'agent.custom_tool_use' ? 'custom' : this.rec.env.type === 'self_hosted' ? 'client' : 'builtin'
        this.open.set(ev.id, { eventId: ev.id, kind, name, input, ask: kind !== 'custom' && ev.evaluated_permission === 'ask' })
        break
      }
      case 'span.model_request_end': {
        const blocks = this.draft
        this.draft = null
        this.openSpan = null
        // A failed request's partial output is dropped, unless it holds a stored tool use: a request closed as an
        // error after a takeover had its tool uses stored, and their results (an error, or the client's) follow,
        // so the conversation must hold them (a result without its tool use is refused by the Messages API).
        const keep = blocks?.length && (!ev.is_error || blocks.some((b) => b.type === 'tool_use'))
        if (keep) this.messages.push({ role: 'assistant', content: blocks })
        const usage = ev.model_usage as ModelUsage | undefined
        if (usage) this.rec.totals = addModelUsage(this.rec.totals, this.session.agent.model.id, usage)
        break
      }
      case 'agent.tool_result':
        this.resolve(String(ev.tool_use_id), ev as ToolOutcome)
        break
      case 'span.outcome_evaluation_start':
        this.gradingSpan = ev.id
        this.outcomeIteration = Number(ev.iteration)
        this.evaluation(String(ev.outcome_id), (x) => ({ ...x, result: 'evaluating', iteration: Number(ev.iteration) }))
        break
      case 'span.outcome_evaluation_end': {
        this.gradingSpan = null
        const usage = ev.usage as ModelUsage | undefined
        if (usage) this.rec.totals = addModelUsage(this.rec.totals, this.session.agent.model.id, usage)
        const o = this.outcome
        const explanation = String(ev.explanation ?? '')
        if (ev.result === 'needs_revision' && o) {
          this.outcomeIteration++
          this.evaluation(o.id, (x) => ({ ...x, result: 'running', iteration: this.outcomeIteration, explanation }))
          this.pushUser([{ type: 'text', text: revisionNote(explanation, this.outcomeIteration - 1, o.max) }])
        } else {
          this.evaluation(String(ev.outcome_id), (x) => ({
            ...x,
            result: ev.result as OutcomeEvaluation['result'],
            explanation,
            completed_at: ev.processed_at,
          }))
          this.outcome = undefined
        }
        break
      }
      case 'session.status_running':
        this.setStatus('running')
        this.turnOpen = true
        this.rec.running_since ??= time(ev)
        break
      case 'session.status_rescheduled':
        this.setStatus('rescheduling')
        this.rec.running_since ??= time(ev)
        break
      case 'session.status_idle': {
        this.setStatus('idle')
        this.stopClock(time(ev))
        this.stopReason = ev.stop_reason as StopReason
        this.turnOpen = this.stopReason.type === 'requires_action' || this.stopReason.type === 'budget_reached'
        break
      }
      case 'session.status_terminated':
        // Archiving is this event: a replay that never saw the record written after it still knows.
        this.session.archived_at ??= ev.processed_at
        this.setStatus('terminated')
        this.stopClock(time(ev))
        this.turnOpen = false
        break
      case 'session.updated':
        this.applyUpdate(ev)
        break
    }
    if (ev.processed_at && (ev.type === 'session.updated' || ev.type.startsWith('session.status_'))) this.session.updated_at = ev.processed_at
  }

  /** Client events leave the mailbox, in the order given. */
  handled(ids: readonly string[]): void {
    for (const id of ids) {
      const e = this.pending.get(id)
      if (!e) continue
      this.pending.delete(id)
      this.consume(e)
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

  /** A client event leaves the mailbox: it now takes part in the conversation. */
  private consume(e: SessionEvent) {
    switch (e.type) {
      case 'user.message':
        this.abandonOpen()
        this.pushUser(e.content as ContentBlockParam[])
        break
      case 'user.define_outcome': {
        // The goal becomes the agent's input; its turn's end is graded against the rubric (outcomes.ts).
        const rubric = e.rubric as { type: string; content?: string }
        const max = typeof e.max_iterations === 'number' ? e.max_iterations : DEFAULT_MAX_ITERATIONS
        this.outcome = { id: String(e.outcome_id), description: String(e.description), rubric: rubric.content ?? '', max }
        this.outcomeIteration = 0
        this.evaluation(this.outcome.id, (x) => ({ ...x, result: 'running' }))
        this.abandonOpen()
        this.pushUser([{ type: 'text', text: outcomeBrief(this.outcome) }])
        break
      }
      case 'system.message': {
        const text = (e.content as Array<{ text: string }>).map((c) => c.text).join('\n')
        this.pushUser([{ type: 'text', text: `<system-message>\n${text}\n</system-message>` }])
        break
      }
      case 'user.tool_result':
        this.ownerOf(String(e.tool_use_id)).resolve(String(e.tool_use_id), e as ToolOutcome)
        break
      case 'user.custom_tool_result':
        this.ownerOf(String(e.custom_tool_use_id)).resolve(String(e.custom_tool_use_id), e as ToolOutcome)
        break
      case 'user.tool_confirmation': {
        const t = this.ownerOf(String(e.tool_use_id)).open.get(String(e.tool_use_id))
        if (t) t.confirmation = { result: e.result as 'allow' | 'deny', deny_message: e.deny_message as string | null }
        break
      }
      case 'user.interrupt': {
        // Naming a child stops that thread only; otherwise every thread stops (WIRE §7.1).
        const only = e.session_thread_id == null ? undefined : this.children.get(String(e.session_thread_id))
        for (const h of only ? [only] : [this, ...this.children.values()]) h.interrupted(e)
        break
      }
    }
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

  private interrupted(at?: SessionEvent) {
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
    return this.session.outcome_evaluations as OutcomeEvaluation[]
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
      content: (outcome.content ?? []) as ToolResultBlockParam['content'],
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

  private applyUpdate(ev: SessionEvent) {
    const s = this.session
    if ('title' in ev) s.title = ev.title as string | null
    if ('metadata' in ev) s.metadata = ev.metadata as Record<string, string>
    if ('agent' in ev) s.agent = ev.agent as typeof s.agent
    if ('budget' in ev) {
      s.budget = ev.budget as typeof s.budget
      if (ev.budget === null) this.rec.budget_removed = true
    }
  }
}
