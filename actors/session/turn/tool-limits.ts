import type { ModelOutput } from './model.js'

/** The Messages API's stop reasons that cut a response off, and the limit each names. */
const CUT_OFF: Readonly<Record<string, string>> = {
  max_tokens: 'output limit (max_tokens)',
  model_context_window_exceeded: 'context window',
}

/** A turn's two limits on tool use (SessionTuning `maxToolRounds`, `maxCutOffCalls`). */
export interface ToolLimits {
  /** Tool-use rounds a turn may run: one model response that calls tools, plus running those tools, is one round. */
  rounds: number
  /** Model responses in a row that each request a single tool call and are cut off before it is complete. */
  cutOffCalls: number
}

/** What of one model response does not run, and why the turn stops (`reached`, the session.error's message). */
export interface ToolVerdict {
  /** The error result of each of the response's tool uses (by index in `outputs`) that must not run. */
  notRun: Map<number, string>
  reached?: string
}

/**
 * A turn's count toward its limits on tool use (the client's `tool_use_limit_reached_error`: the turn stops at one of
 * two limits, and the message states which). A response cut off (`max_tokens`, `model_context_window_exceeded`)
 * while it wrote a tool call leaves that call's input partial: it never runs, and is answered with an error result
 * that says so, so the model may try a smaller call. Counted per turn on the host that runs it (a turn that moves to
 * another host counts afresh there).
 */
export class ToolUseCount {
  private rounds = 0
  private cutOffs = 0

  constructor(private readonly limits: ToolLimits) {}

  /** The turn is over (not parked): the next one counts from zero. */
  reset(): void {
    this.rounds = 0
    this.cutOffs = 0
  }

  /** Counts one model response. */
  take(outputs: readonly ModelOutput[], stopReason: string | null): ToolVerdict {
    const notRun = new Map<number, string>()
    const calls = outputs.flatMap((o, i) => (o.type === 'tool_use' ? [i] : []))
    const limit = stopReason === null ? undefined : CUT_OFF[stopReason]
    const cut = limit !== undefined && outputs.at(-1)?.type === 'tool_use' ? outputs.length - 1 : undefined
    if (cut !== undefined) {
      notRun.set(
        cut,
        `Not run: this call was cut off at the model's ${limit} before it was complete, so its input is partial. Make the call smaller (for example, write a long file in parts).`,
      )
    }
    this.cutOffs = cut !== undefined && calls.length === 1 ? this.cutOffs + 1 : 0
    if (calls.length > notRun.size) this.rounds++
    if (this.rounds > this.limits.rounds) {
      for (const i of calls) notRun.set(i, `Not run: the turn reached its limit of ${this.limits.rounds} tool-use rounds.`)
      return {
        notRun,
        reached: `The turn reached its limit of ${this.limits.rounds} tool-use rounds (one model response that calls tools, plus running those tools, is one round); the tool calls of its last response did not run. Send a message to start a new turn.`,
      }
    }
    if (this.cutOffs >= this.limits.cutOffCalls) {
      return {
        notRun,
        reached: `The turn reached its limit of ${this.limits.cutOffCalls} model responses in a row that each requested a single tool call and were cut off at the model's ${limit} before the call was complete; none of those calls ran. Send a message to start a new turn.`,
      }
    }
    return { notRun }
  }
}
