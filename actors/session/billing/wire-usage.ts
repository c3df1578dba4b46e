import { formatAmount, type SessionUsage } from '../../../protocol/cost.js'
import { listCostCents, type ListCostOptions } from './list-cost.js'
import type { UsageTotals } from './usage.js'

/** The wire `usage` object (session usage; pass `{includeRuntime: false}` for a thread's usage). */
export function toWireUsage(totals: UsageTotals, opts: ListCostOptions = {}): SessionUsage {
  let input = 0
  let output = 0
  let cacheRead = 0
  let write5m = 0
  let write1h = 0
  let webSearch = 0
  let webFetch = 0
  for (const e of totals.entries) {
    input += e.input_tokens
    output += e.output_tokens
    cacheRead += e.cache_read_input_tokens
    write5m += e.cache_creation_5m_input_tokens
    write1h += e.cache_creation_1h_input_tokens
    webSearch += e.web_search_requests
    webFetch += e.web_fetch_requests
  }
  return {
    input_tokens: input,
    output_tokens: output,
    cache_read_input_tokens: cacheRead,
    cache_creation: { ephemeral_5m_input_tokens: write5m, ephemeral_1h_input_tokens: write1h },
    active_seconds: totals.active_ms / 1000,
    list_cost: { amount: formatAmount(listCostCents(totals, opts)), currency: 'USD' },
    server_tool_use: webSearch === 0 && webFetch === 0 ? null : { web_search_requests: webSearch, web_fetch_requests: webFetch },
  }
}
