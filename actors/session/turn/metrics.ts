import { CounterFamily, HistogramFamily, LabelCap, SECONDS_FAST, SECONDS_SLOW } from '../../../metrics/index.js'
import { addModelUsage, emptyUsage, listCostUsd, type ModelUsage } from '../billing/index.js'

/**
 * A session's turns, model requests and tool runs, as metrics of this host. Labels are stop reasons, model names (the
 * first 32 distinct ones an agent names; later ones `other`), tool names (built-in ones; every MCP tool is `mcp`) and
 * outcomes: never a session, agent or request id.
 */
const turns = new CounterFamily('troupe_turns_total', 'Turns ended (idle), by stop reason', ['stop_reason'])
const modelRequests = new CounterFamily('troupe_model_requests_total', 'Model requests, by model and outcome (ok, error, aborted)', ['model', 'outcome'])
const modelSeconds = new HistogramFamily(
  'troupe_model_request_duration_seconds',
  'Time of model requests that answered, from sending one to the end of its streamed response, by model',
  ['model'],
  SECONDS_SLOW,
)
const modelTokens = new CounterFamily('troupe_model_tokens_total', 'Tokens of model responses, by model and type (input, output, cache_read, cache_creation)', [
  'model',
  'type',
])
const listCost = new CounterFamily(
  'troupe_model_list_cost_usd_total',
  "Model responses' list cost in US dollars (tokens and web searches; no runtime), by model",
  ['model'],
)
const toolRuns = new CounterFamily(
  'troupe_tool_runs_total',
  'Tool runs, by tool (built-in names; every MCP tool is mcp) and outcome (ok, error, failed, cancelled)',
  ['tool', 'outcome'],
)
const toolSeconds = new HistogramFamily(
  'troupe_tool_run_duration_seconds',
  'Tool run time, by tool (built-in names; every MCP tool is mcp)',
  ['tool'],
  SECONDS_FAST,
)

const models = new LabelCap()

/** A provider's count as a number to add: anything but a non-negative number (null, NaN) adds nothing. */
const tokens = (x: unknown): number => (typeof x === 'number' && x > 0 ? x : 0)

export const countTurn = (stopReason: string): void => turns.child(stopReason).inc()

/** A model request that ended: `usage` when it answered. */
export function countModelRequest(model: string, outcome: 'ok' | 'error' | 'aborted', seconds: number, usage?: ModelUsage): void {
  const m = models.of(model)
  modelRequests.child(m, outcome).inc()
  if (outcome !== 'ok' || !usage) return
  modelSeconds.child(m).observe(seconds)
  modelTokens.child(m, 'input').inc(tokens(usage.input_tokens))
  modelTokens.child(m, 'output').inc(tokens(usage.output_tokens))
  modelTokens.child(m, 'cache_read').inc(tokens(usage.cache_read_input_tokens))
  modelTokens.child(m, 'cache_creation').inc(tokens(usage.cache_creation_input_tokens))
  listCost.child(m).inc(listCostUsd(addModelUsage(emptyUsage(), model, usage), { includeRuntime: false }))
}

/** A tool run that ended. `tool`: a built-in tool's name, or `mcp`. */
export function countToolRun(tool: string, outcome: 'ok' | 'error' | 'failed' | 'cancelled', seconds: number): void {
  toolRuns.child(tool, outcome).inc()
  toolSeconds.child(tool).observe(seconds)
}
