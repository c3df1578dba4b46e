/**
 * The vendor's public list prices: the one table list cost and budgets are computed from
 * (SPEC "Session": usage.list_cost; DECISIONS "The model").
 *
 * Source: the vendor's public pricing pages, https://www.anthropic.com/pricing (API section) and the docs page
 * "Pricing", https://docs.anthropic.com/en/docs/about-claude/pricing (now served from
 * https://platform.claude.com/docs/en/about-claude/pricing): "Model pricing", "Long context pricing",
 * "Fast mode", "Data residency pricing", "Web search tool" and "Web fetch tool" (the tools' own pages,
 * https://platform.claude.com/docs/en/agents-and-tools/tool-use/web-search-tool and …/web-fetch-tool, say the same).
 * Recorded: 2026-11-21. The figures were written from those pages as published, not re-fetched live on that
 * day; re-check them against the live page whenever this table is touched.
 *
 * Units: USD per million tokens (MTok). Cache columns as the page lists them: "5m cache writes" (1.25 × input),
 * "1h cache writes" (2 × input), "cache hits & refreshes" (0.1 × input); Claude Haiku 3 is the page's one
 * exception (cache writes $0.30 / $0.50).
 *
 * Only models whose published price is known are listed. A model id missing from this table (for example
 * claude-opus-4-7, claude-opus-4-8, claude-opus-5, claude-opus-5-5, claude-sonnet-5-5, claude-haiku-5-5 or the
 * fable models, all of which the client knows by name, or any router-defined alias) has no list price: its tokens
 * are still counted and shown, its list cost is 0, and it is not budgetable (SPEC "Create rules" 6). Add a row,
 * with the page's figures, when the vendor publishes one. Lookups are by exact id: no prefix or family matching.
 */

/** Per-token-class rates, USD per million tokens. */
export interface TokenRates {
  readonly input: number
  readonly output: number
  /** Prompt-cache write with the default 5-minute lifetime. */
  readonly cacheWrite5m: number
  /** Prompt-cache write with the 1-hour lifetime. */
  readonly cacheWrite1h: number
  /** Prompt-cache hit or refresh. */
  readonly cacheRead: number
}

export interface Price extends TokenRates {
  /**
   * Long-context pricing: a request whose whole prompt (input + cache write + cache read tokens) exceeds
   * `aboveInputTokens` is billed, every token of it, at `rates`.
   */
  readonly longContext?: { readonly aboveInputTokens: number; readonly rates: TokenRates }
  /** Rates for requests the API reports with `speed: "fast"`. Absent: fast mode has no published price. */
  readonly fast?: TokenRates
  /** Multiplier on every token rate when the API reports `inference_geo: "us"` (US-only inference). */
  readonly usOnlyInferenceMultiplier?: number
}

/** A model as an agent configuration carries it: an id string or `{id, speed?, inference_geo?}`. */
export type ModelRef = string | { readonly id: string; readonly speed?: 'standard' | 'fast' | null; readonly inference_geo?: string | null }

/**
 * Web search tool: USD 10 per 1,000 searches (`usage.server_tool_use.web_search_requests`), on top of the tokens its
 * results add. Web fetch has no per-request charge: the fetched content is billed as input tokens only.
 */
export const WEB_SEARCH_USD_PER_1000_REQUESTS = 10

/** Session runtime: USD 0.08 per active session hour (SPEC "Limits"). Not a vendor message rate. */
export const RUNTIME_USD_PER_ACTIVE_HOUR = 0.08

const rates = (input: number, output: number, cacheWrite5m: number, cacheWrite1h: number, cacheRead: number) =>
  ({ input, output, cacheWrite5m, cacheWrite1h, cacheRead }) satisfies TokenRates

const OPUS_4_6: Price = {
  ...rates(5, 25, 6.25, 10, 0.5),
  fast: rates(30, 150, 37.5, 60, 3),
  usOnlyInferenceMultiplier: 1.1,
}
const OPUS_4_5: Price = rates(5, 25, 6.25, 10, 0.5)
const OPUS_4: Price = rates(15, 75, 18.75, 30, 1.5) // Opus 4.1 and Opus 4
const SONNET_4_6: Price = { ...rates(3, 15, 3.75, 6, 0.3), usOnlyInferenceMultiplier: 1.1 }
const SONNET_4: Price = {
  // Sonnet 4.5 and Sonnet 4: prompts over 200K tokens (1M-context beta) cost $6 / $22.50.
  ...rates(3, 15, 3.75, 6, 0.3),
  longContext: { aboveInputTokens: 200_000, rates: rates(6, 22.5, 7.5, 12, 0.6) },
}
const SONNET_3_7: Price = rates(3, 15, 3.75, 6, 0.3)
const HAIKU_4_5: Price = rates(1, 5, 1.25, 2, 0.1)
const HAIKU_3_5: Price = rates(0.8, 4, 1, 1.6, 0.08)
const HAIKU_3: Price = rates(0.25, 1.25, 0.3, 0.5, 0.03)

/** The table: canonical model id (aliases and dated ids alike) → list price. */
export const PRICES: ReadonlyMap<string, Price> = new Map<string, Price>([
  ['claude-opus-4-6', OPUS_4_6],
  ['claude-opus-4-5', OPUS_4_5],
  ['claude-opus-4-5-20251101', OPUS_4_5],
  ['claude-opus-4-1', OPUS_4],
  ['claude-opus-4-1-20250805', OPUS_4],
  ['claude-opus-4-0', OPUS_4],
  ['claude-opus-4-20250514', OPUS_4],
  ['claude-sonnet-4-6', SONNET_4_6],
  ['claude-sonnet-4-5', SONNET_4],
  ['claude-sonnet-4-5-20250929', SONNET_4],
  ['claude-sonnet-4-0', SONNET_4],
  ['claude-sonnet-4-20250514', SONNET_4],
  ['claude-3-7-sonnet-latest', SONNET_3_7],
  ['claude-3-7-sonnet-20250219', SONNET_3_7],
  ['claude-haiku-4-5', HAIKU_4_5],
  ['claude-haiku-4-5-20251001', HAIKU_4_5],
  ['claude-3-5-haiku-latest', HAIKU_3_5],
  ['claude-3-5-haiku-20241022', HAIKU_3_5],
  ['claude-3-haiku-20240307', HAIKU_3],
])

/** The list price of a model id, or undefined when the id has no published price in the table. */
export function priceFor(modelId: string): Price | undefined {
  return PRICES.get(modelId)
}

/**
 * Whether a model may run in a budgeted session: its id has a list price and, when it asks for fast mode,
 * fast mode has one too. Accepts a bare id or an agent's model object.
 */
export function isBudgetable(model: ModelRef): boolean {
  const id = typeof model === 'string' ? model : model.id
  const price = priceFor(id)
  if (price === undefined) return false
  if (typeof model !== 'string' && model.speed === 'fast' && price.fast === undefined) return false
  return true
}
