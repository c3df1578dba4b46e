import type { History, OpenTool } from '../history/index.js'
import type { ChildThread } from '../threads/index.js'
import { ADVISOR_TOOL, SEND_TO_AGENT } from '../turn/index.js'
import type { ToolRunner } from '../turn/index.js'
import { ZERO_USAGE, type TurnLoop } from '../turn/index.js'
import type { Emitter } from '../turn/index.js'

const NOT_RERUN =
  'The host running this tool stopped before the tool finished. It was not run again, so that it never runs twice; run it again if that is safe.'

/**
 * A turn that its actor left unfinished: the host running it stopped (a takeover replays a history that ends
 * mid-turn), or the actor failed again and again while running it. Either way what the turn left open is closed
 * first, so that nothing runs twice and the conversation stays valid for the model.
 */
export class Recovery {
  /** The history ends mid-turn: the mailbox carries the turn on before it handles anything else. */
  due: boolean

  /**
   * `children`: the session's child threads (threads.ts). One that was running is rescheduled and closed like the
   * primary; its send, left open on the primary, resumes it (or starts it, when the child was never stored).
   */
  constructor(
    private readonly h: History,
    private readonly events: Emitter,
    private readonly tools: ToolRunner,
    private readonly turns: TurnLoop,
    private readonly children: readonly ChildThread[] = [],
  ) {
    this.due = h.running
  }

  /** After a takeover: the previous host stopped mid-turn. The turn is rescheduled, and carries on. */
  async resume(): Promise<void> {
    this.due = false
    this.events.status('rescheduled')
    for (const c of this.children) {
      if (!c.h.running) continue
      c.events.status('rescheduled')
      closeLeftOpen(c.h, c.events, (t) => this.tools.error(t, NOT_RERUN, c.events))
    }
    this.closeLeftOpen()
    await this.turns.run()
  }

  /**
   * Ends the turn in flight after its actor failed again and again: the client is told why, and the session goes
   * idle instead of staying `running` with nothing driving it.
   */
  abandon(message: string): void {
    this.due = false
    if (!this.h.running) return
    this.closeLeftOpen()
    this.events.emit('session.error', { error: { type: 'unknown_error', message, retry_status: { type: 'exhausted' } } })
    this.turns.idle({ type: 'retries_exhausted' })
  }

  /**
   * Closes the model request span (as an error) and the built-in and MCP tool uses that may have started (an error
   * result, `agent.mcp_tool_result` for an MCP one; never run again, so none runs twice). Tools still waiting for a confirmation stay parked.
   */
  private closeLeftOpen(): void {
    // A send resumes its child, or starts it if it was never stored: a child runs no side effect before its thread and
    // input are stored (a tool waits for what precedes it; a model request is no side effect), so nothing runs twice.
    const delegated = (t: OpenTool) => t.name === SEND_TO_AGENT || t.name === ADVISOR_TOOL
    closeLeftOpen(this.h, this.events, (t) => {
      if (!delegated(t)) this.tools.error(t, NOT_RERUN)
    })
  }
}

function closeLeftOpen(h: History, events: Emitter, close: (t: OpenTool) => void): void {
  if (h.openSpan) events.emit('span.model_request_end', { model_request_start_id: h.openSpan, is_error: true, model_usage: ZERO_USAGE })
  for (const t of [...h.open.values()]) {
    if ((t.kind === 'builtin' || t.kind === 'mcp') && (!t.ask || t.confirmation?.result === 'allow')) close(t)
  }
}
