import type { Mailbox } from '../../kit/index.js'
import type { History, OpenTool } from '../history/index.js'
import type { SessionSandbox } from '../../workdir/index.js'
import type { SkillTexts } from './skill-texts.js'
import type { ToolResultContent } from '../../../protocol/session-events.js'
import { McpFailure, type McpPool } from '../../mcp/index.js'
import { ADVISOR_TOOL, LIST_AGENTS, SEND_TO_AGENT } from './roster.js'
import type { Coordinator, Emitter } from './types.js'
import { routeTool } from './tools.js'
import { countToolRun } from './metrics.js'

const UNENFORCEABLE =
  'This tool cannot run on this host: its sandbox backend cannot enforce the environment’s limited networking (TROUPE_SANDBOX=local, or socat missing).'

/**
 * The tool uses of a turn: the built-in ones it may run, run in the session's sandbox (actors/workdir/: one
 * persistent shell per session, `sandbox/`), and the ones it parks for the client: custom tools, every tool of a self-hosted session, and
 * `always_ask` uses not yet confirmed.
 */
export class ToolRunner {
  /**
   * `lock`: the session's threads share one sandbox (one shell, one workspace), so their tools run one at a time.
   * `coordinator`: the primary thread of a coordinator (threads.ts), whose sends and lists it runs.
   */
  constructor(
    private readonly h: History,
    private readonly events: Emitter,
    private readonly mb: Mailbox,
    private readonly sandbox: SessionSandbox,
    private readonly skills: SkillTexts,
    private readonly lock: ToolLock,
    /** The session's MCP connections (actors/mcp/), which every thread's calls share. */
    private readonly mcp: McpPool,
    private readonly coordinator?: Coordinator,
  ) {}

  /** How tool `name` is handled in this thread. */
  private route(name: string) {
    return routeTool(this.h.session.agent, name, { skills: this.h.skills.length > 0, coordinator: this.coordinator?.tools })
  }

  /**
   * The turn's sends, all at once (WIRE: sends of one response run concurrently): each answered with its child's
   * reply, or parked on what its child waits for. False when the turn was stopped meanwhile.
   */
  private async sends(signal: AbortSignal): Promise<boolean> {
    const coordinator = this.coordinator
    if (!coordinator) return true
    const delegated = (t: OpenTool) => t.kind === 'builtin' && (t.name === SEND_TO_AGENT || t.name === ADVISOR_TOOL) && coordinator.tools.has(t.name)
    const sends = [...this.h.open.values()].filter(delegated)
    if (!sends.length) return true
    await this.mb.settled()
    if (signal.aborted || this.mb.dead) return false
    const outcomes = await Promise.all(sends.map((t) => (t.name === ADVISOR_TOOL ? coordinator.advise(t, signal) : coordinator.send(t, signal))))
    sends.forEach((t, i) => {
      const o = outcomes[i]!
      t.parkedOn = undefined
      if (o === 'stopped') return
      if ('parkedOn' in o) t.parkedOn = o.parkedOn
      else this.events.emit('agent.tool_result', { tool_use_id: t.eventId, content: o.result.content, is_error: o.result.is_error })
    })
    return !signal.aborted && !this.mb.dead
  }

  /**
   * Runs the open tool uses that may run, in order, each answered by its result; returns the ones parked, or
   * `failed` when the environment's packages did not install (the turn then ends: tools cannot run).
   */
  async run(signal: AbortSignal): Promise<OpenTool[] | 'failed'> {
    if (!(await this.sends(signal))) return [...this.h.open.values()]
    for (const t of [...this.h.open.values()]) {
      if (signal.aborted || this.mb.dead) break
      if (t.kind === 'custom' || (t.ask && !t.confirmation) || t.parkedOn) continue
      if (t.confirmation?.result === 'deny') {
        this.error(t, t.confirmation.deny_message || 'The user denied this tool use.')
        continue
      }
      // A self-hosted session's tool (allowed, or needing no confirmation) runs on its worker, which answers it.
      if (t.kind === 'client') continue
      if (t.kind === 'mcp') {
        if ((await this.callMcp(t, signal)) === 'stop') break
        continue
      }
      const route = this.route(t.name)
      if (route.kind === 'skill') {
        await this.launch(t)
        continue
      }
      if (route.kind === 'coordinator') {
        // Sends ran above; a list needs nothing but the roster.
        if (t.name === LIST_AGENTS) this.answer(t, this.coordinator!.list())
        continue
      }
      if (route.kind !== 'builtin') {
        this.error(t, `Tool ${JSON.stringify(t.name)} is not available to this agent.`)
        continue
      }
      // The side effect starts only once its intent (the stored agent.tool_use) is durable: a host that dies
      // after this point leaves a tool_use the next owner closes with an error result, never running it again;
      // one that dies before it leaves nothing that ran.
      await this.mb.settled()
      if (signal.aborted || this.mb.dead) break
      // The session's files in place first (actors/workdir/mounts.ts) and its packages installed: both may take a while, so the
      // check below comes after them.
      const ran = await this.lock.run(async () => {
        const ready = await this.sandbox.prepare(signal)
        if (ready.kind === 'unenforceable') {
          this.error(t, UNENFORCEABLE)
          return 'next'
        }
        if (ready.kind === 'stopped') return 'stop'
        if (ready.kind === 'unprovisioned') {
          this.provisionFailed(ready.message)
          return 'failed'
        }
        // A host whose heartbeat lapsed (a pause) may have lost the session meanwhile: its new owner closes this
        // tool use with an error result, so running it here could make it run after all. Wait until it knows; step
        // down if the session is no longer its own.
        await this.mb.untilServing('it starts no tool until it knows the session is still its own')
        const t0 = performance.now()
        const result = ready.kind === 'refused' ? ready.result : await this.sandbox.runTool(t.name, t.input, signal)
        // A built-in's name: one of a few (the route said so).
        countToolRun(t.name, signal.aborted ? 'cancelled' : result.is_error ? 'error' : 'ok', (performance.now() - t0) / 1000)
        // An interrupted run still gets its result (the sandbox says it was interrupted); then the turn stops.
        this.answer(t, result)
        return 'next'
      })
      if (ran === 'failed') return 'failed'
      if (ran === 'stop' || signal.aborted) break
    }
    return [...this.h.open.values()]
  }

  /**
   * An MCP tool use, called on its server through the session's connection once its intent is stored (the write-ahead
   * rule of the built-in tools: a host that dies during the call leaves a use without a result, which the next owner
   * answers as interrupted, never calling it again). An interrupt cancels the call by the protocol and stops the turn.
   */
  private async callMcp(t: OpenTool, signal: AbortSignal): Promise<'next' | 'stop'> {
    await this.mb.settled()
    if (signal.aborted || this.mb.dead) return 'stop'
    const agent = this.h.session.agent
    const server = agent.mcp_servers.find((s) => s.name === t.server)
    if (!server || !agent.tools.some((x) => x.type === 'mcp_toolset' && x.mcp_server_name === t.server)) {
      this.error(t, `MCP server ${JSON.stringify(t.server)} is no longer one of this agent's.`)
      return 'next'
    }
    await this.mb.untilServing('it calls no MCP tool until it knows the session is still its own')
    const t0 = performance.now()
    try {
      const result = await this.mcp.get(server).call(t.name, t.input, signal)
      countToolRun('mcp', result.is_error ? 'error' : 'ok', (performance.now() - t0) / 1000)
      this.answer(t, result)
      return 'next'
    } catch (err) {
      countToolRun('mcp', signal.aborted ? 'cancelled' : 'failed', (performance.now() - t0) / 1000)
      if (this.mb.dead) return 'stop'
      if (signal.aborted) {
        this.error(t, 'The MCP tool call was cancelled: the session was interrupted.')
        return 'stop'
      }
      const f = err instanceof McpFailure ? err : new McpFailure('unreachable', server.name, `MCP server ${server.name}: ${String(err)}`)
      this.error(t, `The MCP tool call failed: ${f.message}`)
      this.events.emit('session.error', {
        error: {
          type: f.kind === 'auth' ? 'mcp_authentication_failed_error' : 'mcp_connection_failed_error',
          mcp_server_name: server.name,
          message: f.message,
          retry_status: { type: 'retrying' },
        },
      })
      return 'next'
    }
  }

  /**
   * SPEC environments rule 11: a package-manager error blocks tool execution. The turn's tool uses are answered
   * without running, the session says why, and the next turn that uses a tool installs again (the lists are stored
   * with the session; the sandbox's directory says what was installed).
   */
  private provisionFailed(message: string): void {
    for (const t of this.h.open.values()) {
      if (t.kind === 'builtin') this.error(t, 'Not run: the environment’s packages did not install (see the session.error event).')
    }
    this.events.emit('session.error', {
      error: {
        type: 'unknown_error',
        message: `The environment's packages did not install, so tools cannot run; the next turn that uses a tool installs them again. ${message}`,
        retry_status: { type: 'exhausted' },
      },
    })
  }

  /**
   * A `Skill` call (SPEC session create rule 10): `Launching skill: <name>` once its SKILL.md can be read, which the
   * next model request injects after this result (skill-context.ts). Nothing runs and the sandbox is not needed: the
   * skill's files are put in place with the session's other mounts, before its first sandbox tool.
   */
  private async launch(t: OpenTool): Promise<void> {
    const skills = this.h.skills
    const name = t.input.skill
    const skill = skills.find((s) => s.name === name)
    if (!skill) {
      this.error(t, `No skill is named ${JSON.stringify(name)}; call Skill with one of: ${skills.map((s) => s.name).join(', ')}.`)
      return
    }
    try {
      await this.skills.get(skill.object, skill.name)
    } catch (err) {
      this.error(t, `Skill ${skill.name} could not be loaded (${(err as Error).message}); try again.`)
      return
    }
    this.events.emit('agent.tool_result', { tool_use_id: t.eventId, content: [{ type: 'text', text: `Launching skill: ${skill.name}` }], is_error: false })
  }

  private answer(t: OpenTool, result: { content: ToolResultContent[]; is_error: boolean }): void {
    resultOf(t, result.content, result.is_error, this.events)
  }

  /** Answers a tool use with an error result, without running it (`events`: its thread's, default this one's). */
  error(t: OpenTool, text: string, events: Emitter = this.events): void {
    resultOf(t, [{ type: 'text', text }], true, events)
  }
}

/** A tool use's result event: `agent.mcp_tool_result` for an MCP tool's, `agent.tool_result` for the others'. */
function resultOf(t: OpenTool, content: ToolResultContent[], is_error: boolean, events: Emitter): void {
  if (t.kind === 'mcp') events.emit('agent.mcp_tool_result', { mcp_tool_use_id: t.eventId, content, is_error })
  else events.emit('agent.tool_result', { tool_use_id: t.eventId, content, is_error })
}

/** One tool at a time in a session's sandbox, whichever thread asks (a chain of promises; a failure does not break it). */
export class ToolLock {
  private tail: Promise<unknown> = Promise.resolve()

  run<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.tail.then(fn, fn)
    this.tail = next.catch(() => undefined)
    return next
  }
}
