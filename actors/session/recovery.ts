import type { SessionEvents } from './events.js'
import type { History } from './history.js'
import type { ToolRunner } from './tool-runner.js'
import { ZERO_USAGE, type TurnLoop } from './turn.js'

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

  constructor(
    private readonly h: History,
    private readonly events: SessionEvents,
    private readonly tools: ToolRunner,
    private readonly turns: TurnLoop,
  ) {
    this.due = h.running
  }

  /** After a takeover: the previous host stopped mid-turn. The turn is rescheduled, and carries on. */
  async resume(): Promise<void> {
    this.due = false
    this.events.emit('session.status_rescheduled', {})
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
   * Closes the model request span (as an error) and the built-in tool uses that may have started (an error result;
   * never run again, so none runs twice). Tools still waiting for a confirmation stay parked.
   */
  private closeLeftOpen(): void {
    if (this.h.openSpan) {
      this.events.emit('span.model_request_end', { model_request_start_id: this.h.openSpan, is_error: true, model_usage: ZERO_USAGE })
    }
    for (const t of [...this.h.open.values()]) {
      if (t.kind === 'builtin' && (!t.ask || t.confirmation?.result === 'allow')) this.tools.error(t, NOT_RERUN)
    }
  }
}
