/**
 * List cost (SPEC "Session": usage.list_cost). Arithmetic is exact: token, web-search and runtime charges are
 * summed as a bigint count of a unit small enough that every rate in the price table is a whole number of it
 * (UNITS_PER_CENT units make one cent), and the total is rounded to the nearest cent, half up, once at the end.
 */
import { priceFor, RUNTIME_USD_PER_ACTIVE_HOUR, WEB_SEARCH_USD_PER_1000_REQUESTS, type TokenRates } from './prices.js'
import type { UsageEntry, UsageTotals } from './usage.js'

export interface ListCostOptions {
  /** Include 0.08 USD per active hour. Default true; false for thread list cost (SPEC: it excludes runtime). */
  includeRuntime?: boolean
}

// Unit: 1e-14 USD / 3,600,000. Rates in USD per MTok become whole micro-dollars per MTok (= pico-dollars per
// token); a percentage multiplier (110 for ×1.1) keeps them whole; the 3,600,000 (ms per hour) makes a
// per-hour runtime price whole per millisecond.
const MS_PER_HOUR = 3_600_000n
/** Exact list-cost units per US cent. */
export const UNITS_PER_CENT = 10n ** 12n * MS_PER_HOUR

/** USD (a decimal from the price table) → whole micro-dollars. The table has at most 6 decimal places. */
const microUsd = (usd: number): bigint => BigInt(Math.round(usd * 1_000_000))

function entryUnits(e: UsageEntry): bigint {
  const price = priceFor(e.model)
  if (price === undefined) return 0n // no list price: tokens stay visible, cost 0
  let r: TokenRates = price
  if (e.speed === 'fast' && price.fast) r = price.fast
  else if (e.long_context && price.longContext) r = price.longContext.rates
  const multiplier = e.us_only ? price.usOnlyInferenceMultiplier : undefined
  const percent = BigInt(multiplier === undefined ? 100 : Math.round(multiplier * 100))
  // Σ tokens × micro-USD per MTok = pico-USD; × percent = 1e-14 USD; × ms per hour = units.
  const picoUsd =
    BigInt(e.input_tokens) * microUsd(r.input) +
    BigInt(e.output_tokens) * microUsd(r.output) +
    BigInt(e.cache_read_input_tokens) * microUsd(r.cacheRead) +
    BigInt(e.cache_creation_5m_input_tokens) * microUsd(r.cacheWrite5m) +
    BigInt(e.cache_creation_1h_input_tokens) * microUsd(r.cacheWrite1h)
  const tokens = picoUsd * percent * MS_PER_HOUR
  // A search costs (USD per 1000) / 1000; in units: micro-USD × 1e8 × 3.6e6 / 1000.
  const search = (BigInt(e.web_search_requests) * microUsd(WEB_SEARCH_USD_PER_1000_REQUESTS) * 10n ** 8n * MS_PER_HOUR) / 1000n
  return tokens + search
}

/** Runtime charge in units: ms × (micro-USD per hour) × 1e8 × 3.6e6 / 3.6e6. */
const runtimeUnits = (ms: number): bigint => BigInt(Math.max(0, Math.round(ms))) * microUsd(RUNTIME_USD_PER_ACTIVE_HOUR) * 10n ** 8n

/**
 * The exact, unrounded list cost in units (UNITS_PER_CENT to the cent): tokens priced per model, web searches,
 * and (unless excluded) 0.08 USD per active hour. A model without a list price contributes nothing, web searches
 * included.
 */
export function listCostUnits(totals: UsageTotals, opts: ListCostOptions = {}): bigint {
  let sum = 0n
  for (const e of totals.entries) sum += entryUnits(e)
  if (opts.includeRuntime !== false) sum += runtimeUnits(totals.active_ms)
  return sum
}

/** Rounds exact units to the nearest cent, half up. */
export function unitsToCents(units: bigint): number {
  const u = units < 0n ? 0n : units
  return Number((u + UNITS_PER_CENT / 2n) / UNITS_PER_CENT)
}

/** The list cost in whole US cents, rounded to the nearest cent (half up) once, at the end. */
export function listCostCents(totals: UsageTotals, opts: ListCostOptions = {}): number {
  return unitsToCents(listCostUnits(totals, opts))
}

/** The list cost in US dollars, unrounded (for metrics: a sum over many requests that a rounding per request would skew). */
export function listCostUsd(totals: UsageTotals, opts: ListCostOptions = {}): number {
  return Number(listCostUnits(totals, opts)) / Number(UNITS_PER_CENT) / 100
}
