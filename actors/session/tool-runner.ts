import type { Mailbox } from '../kit/mailbox.js'
import type { SessionEvents } from './events.js'
import type { History, OpenTool } from './history.js'
import type { SessionSandbox } from './session-sandbox.js'
import type { SkillTexts } from './skill-texts.js'
import { routeTool } from './tools.js'

const UNENFORCEABLE =
  'This tool cannot run on this host: its sandbox backend cannot enforce the environment’s limited networking (TROUPE_SANDBOX=local, or socat missing).'

/**
 * The tool uses of a turn: the built-in ones it may run, run in the session's sandbox (session-sandbox.ts: one
 * persistent shell per session, `sandbox/`), and the ones it parks for the client: custom tools, every tool of a self-hosted session, and
 * `always_ask` uses not yet confirmed.
 */
export class ToolRunner {
  constructor(
    private readonly h: History,
    private readonly events: SessionEvents,
    private readonly mb: Mailbox,
    private readonly sandbox: SessionSandbox,
    private readonly skills: SkillTexts,
  ) {}

  /**
   * Runs the open tool uses that may run, in order, each answered by its result; returns the ones parked, or
   * `failed` when the environment's packages did not install (the turn then ends: tools cannot run).
   */
  async run(signal: AbortSignal): Promise<OpenTool[] | 'failed'> {
    for (const t of [...this.h.open.values()]) {
      if (signal.aborted || this.mb.dead) break
      if (t.kind === 'custom' || (t.ask && !t.confirmation)) continue
      if (t.confirmation?.result === 'deny') {
        this.error(t, t.confirmation.deny_message || 'The user denied this tool use.')
        continue
      }
      // A self-hosted session's tool (allowed, or needing no confirmation) runs on its worker, which answers it.
      if (t.kind === 'client') continue
      const route = routeTool(this.h.session.agent, t.name, !!this.h.rec.skills?.length)
      if (route.kind === 'skill') {
        await this.launch(t)
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
      // The session's files in place first (mounts.ts) and its packages installed: both may take a while, so the
      // check below comes after them.
      const ready = await this.sandbox.prepare(signal)
      if (ready.kind === 'unenforceable') {
        this.error(t, UNENFORCEABLE)
        continue
      }
      if (ready.kind === 'stopped') break
      if (ready.kind === 'unprovisioned') {
        this.provisionFailed(ready.message)
        return 'failed'
      }
      // A host whose heartbeat lapsed (a pause) may have lost the session meanwhile: its new owner closes this
      // tool use with an error result, so running it here could make it run after all. Step down instead.
      this.mb.checkServing('it starts no tool until it knows the session is still its own')
      const result = ready.kind === 'refused' ? ready.result : await this.sandbox.runTool(t.name, t.input, signal)
      // An interrupted run still gets its result (the sandbox says it was interrupted); then the turn stops.
      this.events.emit('agent.tool_result', { tool_use_id: t.eventId, content: result.content, is_error: result.is_error })
      if (signal.aborted) break
    }
    return [...this.h.open.values()]
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
    const skills = this.h.rec.skills ?? []
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

  /** Answers a tool use with an error result, without running it. */
  error(t: OpenTool, text: string): void {
    this.events.emit('agent.tool_result', { tool_use_id: t.eventId, content: [{ type: 'text', text }], is_error: true })
  }
}
