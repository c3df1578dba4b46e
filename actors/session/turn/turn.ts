import type { MessageCreateParamsStreaming } from '@anthropic-ai/sdk/resources/messages'
import type { StopReason } from '../../../protocol/events.js'
import type { RefusalStopDetails, SpanModelUsage } from '../../../protocol/session-events.js'
import { newId } from '../../../protocol/ids.js'
import { intervalAfter, type Mailbox } from '../../kit/index.js'
import { budgetReached } from '../billing/index.js'
import type { ModelUsage, UsageTotals } from '../billing/index.js'
import type { Budget } from '../../../protocol/cost.js'
import { toWireUsage } from '../billing/index.js'
import type { History } from '../history/index.js'
import { classifyFailure, streamModel, type ModelResponse } from './model.js'
import type { SessionSandbox } from '../../workdir/index.js'
import type { ToolRunner } from './tool-runner.js'
import { permissionFields, type Roster, routeTool, toolDefinitions } from './tools.js'
import { skillDir, withSkills } from './skill-context.js'
import { selfHostedOf, workAfterTurn } from '../admission/index.js'
import { grade } from './grader.js'
import { coordinatorToolNames } from './roster.js'
import type { Emitter, RecordPort, TurnDeps } from './types.js'
import { estimateTokens } from '../../../protocol/skill-rules.js'
import type { Policy } from '../../../protocol/schemas/agent.js'
import { ToolUseCount } from './tool-limits.js'
import { systemWithMemory } from './memory-context.js'
import type { McpPool } from '../../mcp/index.js'
import { type McpCatalog, McpTurnTools, NO_MCP } from './mcp-tools.js'
import { readableResult, refusedWebTool, webTools } from './web-tools.js'
import { countModelRequest, countTurn } from './metrics.js'

/** The service's own tools (a skill launch, a coordinator's list and send) run nothing in the sandbox: nothing to confirm. */
const SERVICE_TOOL_POLICY: Policy = { type: 'always_allow' }

/** The parts of a session actor its turns use. */
export interface TurnParts {
  readonly id: string
  /** The thread's history: the primary's, or a child's (threads.ts). */
  readonly h: History
  readonly mb: Mailbox
  readonly events: Emitter
  /** The session record's writes (a child thread's turns write none: its events are its state). */
  readonly writer: RecordPort
  /** What the session has spent, all threads together, and its budget: checked before every model request. */
  readonly spend: () => { totals: UsageTotals; budget: Budget | null }
  /** A coordinator's primary thread: its roster and advisor, offered through its tools (threads.ts). */
  readonly roster?: Roster
  readonly tools: ToolRunner
  /** The session's MCP connections, whose tools each model request offers (mcp-tools.ts). */
  readonly mcp: McpPool
  readonly sandbox: Pick<SessionSandbox, 'hasOutputs' | 'publishOutputs' | 'system'>
  readonly deps: TurnDeps
}

/** The usage of a model request that produced nothing (failed, or closed after a takeover). */
export const ZERO_USAGE: SpanModelUsage = { input_tokens: 0, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, speed: null }

const NO_MODEL =
  'No model endpoint is configured on this server: set TROUPE_MODEL_BASE_URL or ANTHROPIC_API_KEY on the serving hosts (the key alone calls https://api.anthropic.com; a base URL that needs a key takes both).'

/** What the running turn did so far, for its log line when it ends (running → idle). */
interface TurnStats {
  startedAt: number
  modelRequests: number
  toolUses: number
  inputTokens: number
  outputTokens: number
}

const newTurnStats = (): TurnStats => ({ startedAt: Date.now(), modelRequests: 0, toolUses: 0, inputTokens: 0, outputTokens: 0 })

/**
 * A session's turns: from its input to its idle, model requests (the budget checked before each, failures retried
 * visibly: `session.error` with `retry_status`, `session.status_rescheduled`, running again) and tool runs in turn,
 * until the model is done, a tool use is parked for the client, the budget is reached or the turn is interrupted.
 * One per actor: a turn parked on tools carries on here when their results arrive.
 */
export class TurnLoop {
  /** Aborts the running step (an interrupt, the actor stopping). */
  private ac: AbortController | undefined
  private stats: TurnStats | undefined
  /** The request whose message started the turn: its log lines name it. */
  private rid: string | undefined
  private lastStop: { reason: StopReason; details: RefusalStopDetails | null } | undefined
  /** Failed attempts of the current model request. */
  private attempts = 0
  /** The turn's count toward its limits on tool use. */
  private readonly toolUses: ToolUseCount
  /** The agent's MCP tools, listed for each model request. */
  private readonly mcpTools: McpTurnTools
  /** Web tools the model endpoint refused this turn: its next requests go without them (web-tools.ts). */
  private readonly refusedWeb = new Set<string>()
  /** The last response stopped at `pause_turn` (a server tool's long turn): the model continues it with another request. */
  private paused = false

  constructor(private readonly p: TurnParts) {
    const settings = p.deps.settings
    this.toolUses = new ToolUseCount({ rounds: settings.maxToolRounds, cutOffCalls: settings.maxCutOffCalls })
    this.mcpTools = new McpTurnTools(p.mcp, p.events)
  }

  /** A new turn: its input is the message the request `rid` stored. */
  begin(rid: string | undefined): void {
    this.rid = rid
    this.attempts = 0
    this.paused = false
    this.mcpTools.reset()
    this.refusedWeb.clear()
  }

  /** The running turn stops at its next step. */
  abort(): void {
    this.ac?.abort()
  }

  /** Runs the turn until it is parked, ends or is interrupted. */
  async run(): Promise<void> {
    const { h, mb, events } = this.p
    // An interrupt stored after the mailbox took this turn's input, but before the turn began, found no turn
    // to abort: the turn does not start, and the mailbox handles the interrupt next.
    if ([...h.pending.values()].some((e) => e.type === 'user.interrupt')) return
    // An archive that landed while this turn's input was being stored or taken from the mailbox wins: an archived
    // session never starts a turn (it would run on, refusing the interrupt and the delete that could stop it).
    if (h.session.archived_at && !h.running) return
    const ac = new AbortController()
    this.ac = ac
    try {
      if (h.status !== 'running') {
        this.stats ??= newTurnStats()
        events.status('running')
        this.p.writer.running()
      }
      for (;;) {
        if (ac.signal.aborted || mb.dead) return
        if (h.open.size) {
          const parked = await this.p.tools.run(ac.signal)
          if (ac.signal.aborted || mb.dead) return
          if (parked === 'failed') return this.end({ type: 'retries_exhausted' })
          // A send parked on a child at the budget parks this turn at it too: raising the budget resumes both.
          if (parked.some((t) => t.parkedOn === 'budget')) return this.budgetStop(true)
          if (parked.length)
            return this.end({ type: 'requires_action', event_ids: parked.flatMap((t) => (Array.isArray(t.parkedOn) ? t.parkedOn : [t.eventId])) })
          continue
        }
        // The turn's work is done: with an outcome open, the grader judges it against the rubric (grader.ts).
        const more = h.needsModel() || this.paused
        const grading = !more && h.outcome
        if (!more && !grading) {
          const stop = this.lastStop
          this.lastStop = undefined
          return this.end(stop?.reason ?? { type: 'end_turn' }, stop?.details ?? null)
        }
        // What comes next costs: a grader pass or a model request.
        const atBudget = this.budgetStop()
        if (atBudget) return atBudget
        if (grading) {
          // A revision asked for is the agent's next input, and the loop goes on.
          if (!(await grade({ h, dead: () => mb.dead, events, deps: this.p.deps }, grading, ac.signal))) return
          continue
        }
        if (!(await this.modelRequest(ac.signal))) return
      }
    } finally {
      if (this.ac === ac) this.ac = undefined
    }
  }

  /**
   * Ends the turn at the session's budget (all its threads' spending together) when it is reached, or (`reached`) a
   * child stopped at it: the client is told what was spent, and the turn waits for a raise. Undefined: it goes on.
   */
  private budgetStop(reached = false): Promise<void> | undefined {
    const spent = this.p.spend()
    if (!reached && !budgetReached(spent.totals, spent.budget)) return undefined
    this.p.events.emit('session.usage', { usage: toWireUsage(spent.totals), budget: spent.budget })
    return this.end({ type: 'budget_reached' })
  }

  /**
   * The turn ends (or parks, or is interrupted): what it wrote to the outputs folder is published (actors/workdir/outputs/), then
   * the session goes idle. A turn abandoned after repeated failures goes idle without a pass (`idle`): the next does it.
   */
  async end(stop: StopReason, details: RefusalStopDetails | null = null): Promise<void> {
    if (this.p.sandbox.hasOutputs()) {
      await this.p.sandbox.publishOutputs()
      if (this.p.mb.dead) return
    }
    this.idle(stop, details)
  }

  /** The session goes idle, its record says so, and one log line sums the turn up. */
  idle(stop: StopReason, details: RefusalStopDetails | null = null): void {
    const started = this.stats?.startedAt ?? this.p.h.rec.running_since
    // A turn parked (on the client, on the budget) is still the same turn; any other idle ends it.
    if (stop.type !== 'requires_action' && stop.type !== 'budget_reached') this.toolUses.reset()
    this.p.events.status('idle', { stop_reason: stop, stop_details: details })
    countTurn(stop.type)
    void this.p.writer.persist()
    // The session's work item follows the session's turn, the primary thread's (a child's parks it through its send).
    if (!this.p.h.thread) workAfterTurn(this.p.deps.ctx, selfHostedOf(this.p.h.rec), stop, this.rid)
    const s = this.stats ?? newTurnStats()
    this.stats = undefined
    this.p.deps.ctx.log.info(
      {
        session: this.p.id,
        rid: this.rid,
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

  /** One model request with its retries. False when the turn ended (exhausted, failed or interrupted). */
  private async modelRequest(signal: AbortSignal): Promise<boolean> {
    const { h, events, deps } = this.p
    const model = deps.model
    const stats = (this.stats ??= newTurnStats())
    if (!model) {
      events.emit('session.error', { error: { type: 'model_request_failed_error', message: NO_MODEL, retry_status: { type: 'exhausted' } } })
      await this.end({ type: 'retries_exhausted' })
      return false
    }
    // The MCP servers are listed (or their connections opened) before the request's span starts.
    const roster = this.p.roster
    const offers = { skills: h.skills.length > 0, coordinator: roster && coordinatorToolNames(roster.members, roster.advisor) }
    const builtins = toolDefinitions(h.session.agent, h.skills, deps.settings.contextWindow, roster)
    const web = webTools(h.session.agent, new Set(builtins.map((t) => t.name)), this.refusedWeb)
    const mcp = await this.mcpTools.catalog(h.session.agent, new Set([...builtins, ...web.defs].map((t) => t.name)), signal)
    if (signal.aborted || this.p.mb.dead) return false
    // The request starts while its span event is still being stored: the chain keeps every event in order.
    const start = events.emit('span.model_request_start', {})
    let res: ModelResponse
    stats.modelRequests++
    const t0 = performance.now()
    try {
      res = await streamModel(model, await this.params([...builtins, ...web.defs, ...mcp.defs], mcp), signal, events.preview, () => newId('sevt'))
    } catch (err) {
      const f = classifyFailure(err, model.endpoint)
      countModelRequest(h.session.agent.model.id, f.kind === 'aborted' ? 'aborted' : 'error', (performance.now() - t0) / 1000)
      events.emit('span.model_request_end', { model_request_start_id: start.id, is_error: true, model_usage: ZERO_USAGE })
      if (f.kind === 'aborted') return false
      // A model or proxy without server tools: the turn goes on at once without the tool it named (the next turn offers it again).
      const refused = refusedWebTool(err, web.defs)
      if (refused) {
        this.refusedWeb.add(refused.name)
        const message = `The model endpoint refused the web tool ${refused.name} (${refused.type}); this turn goes on without it, and the next turn offers it again. ${f.message}`
        deps.ctx.log.warn({ session: this.p.id, rid: this.rid, endpoint: model.endpoint, tool: refused.type }, message)
        events.emit('session.error', { error: { type: 'model_request_failed_error', message, retry_status: { type: 'retrying' } } })
        return true
      }
      const policy = deps.modelRetry
      const retry = f.kind === 'retryable' && this.attempts + 1 < policy.maximumAttempts
      deps.ctx.log.warn(
        { session: this.p.id, rid: this.rid, endpoint: model.endpoint, error_type: f.type, attempt: this.attempts + 1, retrying: retry },
        f.message,
      )
      events.emit('session.error', { error: { type: f.type, message: f.message, retry_status: { type: retry ? 'retrying' : 'exhausted' } } })
      if (!retry) {
        this.attempts = 0
        await this.end({ type: 'retries_exhausted' })
        return false
      }
      const wait = (f.kind === 'retryable' && f.retryAfterMs) || intervalAfter(policy, this.attempts + 1)
      this.attempts++
      events.status('rescheduled')
      void this.p.writer.persist()
      if (!(await sleep(wait, signal))) return false
      events.status('running')
      return true
    }
    this.attempts = 0
    countModelRequest(h.session.agent.model.id, 'ok', (performance.now() - t0) / 1000, res.usage)
    stats.inputTokens += res.usage.input_tokens ?? 0
    stats.outputTokens += res.usage.output_tokens ?? 0
    const agent = h.session.agent
    const verdict = this.toolUses.take(res.outputs, res.stopReason)
    const unrun: Array<{ id: string; text: string }> = []
    /** The response's web tool uses: the API's id → the event's. */
    const served = new Map<string, string>()
    this.paused = res.stopReason === 'pause_turn'
    res.outputs.forEach((o, i) => {
      if (o.type === 'agent.thinking') events.emit('agent.thinking', {}, o.id)
      else if (o.type === 'agent.message') events.emit('agent.message', { content: o.content }, o.id)
      else if (o.type === 'server_tool_use') {
        // Run by the provider already: its policy is reported, never waited on (web-tools.ts offers none under always_ask).
        const perm = permissionFields(web.policy(o.name) ?? SERVICE_TOOL_POLICY)
        served.set(o.id, events.emit('agent.tool_use', { name: o.name, input: o.input, ...perm, server_tool_use_id: o.id }).id)
      } else if (o.type === 'server_tool_result') {
        const { content, is_error } = readableResult(o.block)
        const use = served.get(o.block.tool_use_id) ?? o.block.tool_use_id
        events.emit('agent.tool_result', { tool_use_id: use, content, ...(is_error ? { is_error } : {}), server_tool_result: o.block })
      } else {
        stats.toolUses++
        const route = routeTool(agent, o.name, offers)
        let use: { id: string }
        const viaMcp = route.kind === 'unknown' ? mcp.route(o.name) : undefined
        if (route.kind === 'custom') use = events.emit('agent.custom_tool_use', { name: o.name, input: o.input })
        else if (viaMcp) {
          const perm = permissionFields(viaMcp.policy)
          use = events.emit('agent.mcp_tool_use', { mcp_server_name: viaMcp.server, name: viaMcp.tool, input: o.input, ...perm })
        } else {
          const policy = route.kind === 'skill' || route.kind === 'coordinator' ? SERVICE_TOOL_POLICY : route.kind === 'builtin' ? route.policy : undefined
          const perm = policy ? permissionFields(policy) : {}
          use = events.emit('agent.tool_use', { name: o.name, input: o.input, ...perm })
        }
        const text = verdict.notRun.get(i)
        if (text !== undefined) unrun.push({ id: use.id, text })
      }
    })
    events.emit('span.model_request_end', { model_request_start_id: start.id, is_error: false, model_usage: wireModelUsage(res.usage) })
    // After the span's end, which puts the response in the conversation: each result follows its call.
    for (const u of unrun) events.emit('agent.tool_result', { tool_use_id: u.id, content: [{ type: 'text', text: u.text }], is_error: true })
    this.lastStop = res.stopReason === 'refusal' ? { reason: { type: 'refusal' }, details: { type: 'refusal', category: null, explanation: null } } : undefined
    if (verdict.reached === undefined) return true
    events.emit('session.error', { error: { type: 'tool_use_limit_reached_error', message: verdict.reached, retry_status: { type: 'exhausted' } } })
    await this.end({ type: 'retries_exhausted' })
    return false
  }

  /** The request: `tools` offered (the built-in, service, custom and MCP tools), past MCP uses named as `mcp` offers them. */
  private async params(tools: MessageCreateParamsStreaming['tools'] & object, mcp: McpCatalog = NO_MCP): Promise<MessageCreateParamsStreaming> {
    const { h, deps } = this.p
    const agent = h.session.agent
    const m = agent.model
    const skills = h.skills
    const contextWindow = deps.settings.contextWindow
    const system = systemWithMemory(this.p.sandbox.system(agent.system, h.session.resources), h.session.resources)
    let messages = mcp.rename(h.messages, h.mcpUses)
    if (h.activations.length) {
      const texts = new Map<string, string | undefined>()
      for (const a of h.activations) {
        const s = skills.find((x) => x.name === a.name)
        if (s && !texts.has(s.name)) texts.set(s.name, await deps.skillTexts.get(s.object, s.name).catch(() => undefined))
      }
      const baseTokens = estimateTokens(JSON.stringify(messages)) + estimateTokens(system ?? '') + estimateTokens(JSON.stringify(tools))
      const dirs = new Map(skills.map((s) => [s.name, skillDir(s)]))
      messages = withSkills(messages, h.activations, texts, { contextWindow, baseTokens, dirs })
    }
    return {
      model: m.id,
      max_tokens: deps.settings.maxTokens,
      messages,
      stream: true,
      ...(system ? { system } : {}),
      ...(tools.length ? { tools } : {}),
      ...(m.speed ? { speed: m.speed } : {}),
      ...(m.inference_geo ? { inference_geo: m.inference_geo } : {}),
      ...(m.effort ? { output_config: { effort: m.effort.type } } : {}),
    } as MessageCreateParamsStreaming
  }
}

function wireModelUsage(u: ModelUsage): SpanModelUsage {
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
