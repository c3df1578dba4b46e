/**
 * Usage accounting and list cost (SPEC "Session": usage, budget; WIRE §3, §6, §7.2). Pure functions over plain,
 * serialisable records; nothing here throws on provider data, and the budget rules return an error code for the
 * caller to map onto the error catalog.
 *
 * Arithmetic is exact: token, web-search and runtime charges are summed as a bigint count of a unit small enough
 * that every rate in the price table is a whole number of it (UNITS_PER_CENT units make one cent), and the total
 * is rounded to the nearest cent, half up, once at the end.
 */
import {
  priceFor,
  isBudgetable,
  RUNTIME_USD_PER_ACTIVE_HOUR,
  WEB_SEARCH_USD_PER_1000_REQUESTS,
  type ModelRef,
  type TokenRates,
} from './prices.js'

// ---------------------------------------------------------------------------------------------------------------
// Shapes

/** One request's usage as the Messages API reports it (the SDK's `Usage` is assignable to this). */
export interface ModelUsage {
  input_tokens: number
  output_tokens: number
  cache_creation_input_tokens?: number | null
  cache_read_input_tokens?: number | null
  /** Cache writes by lifetime. When absent, all of `cache_creation_input_tokens` counts as 5-minute writes. */
  cache_creation?: { ephemeral_5m_input_tokens?: number | null; ephemeral_1h_input_tokens?: number | null } | null
  server_tool_use?: { web_search_requests?: number | null; web_fetch_requests?: number | null } | null
  speed?: 'standard' | 'fast' | null
  /** "us" marks US-only inference, which some models price higher. */
  inference_geo?: string | null
}

/** WIRE §3 MonetaryAmount: integer US cents as a decimal string without leading zeros. */
export interface MonetaryAmount {
  amount: string
  currency: 'USD'
}

/** WIRE §3 Budget (BudgetLimit). */
export interface Budget {
  type: 'limit'
  max_list_cost: MonetaryAmount
}

/** WIRE §6 SessionUsage, as Troupe always fills it in. */
export interface SessionUsage {
  input_tokens: number
  output_tokens: number
  cache_read_input_tokens: number
  cache_creation: { ephemeral_5m_input_tokens: number; ephemeral_1h_input_tokens: number }
  /** Seconds, to the millisecond. */
  active_seconds: number
  list_cost: MonetaryAmount | null
  /** Null until a server tool (web search or web fetch) has been used. */
  server_tool_use: { web_search_requests: number; web_fetch_requests: number } | null
}

/** Counters for one model and one billing tier. */
export interface UsageEntry {
  model: string
  /** `fast` when the API reported fast mode. */
  speed: 'standard' | 'fast'
  /** The request's whole prompt exceeded the model's long-context threshold. */
  long_context: boolean
  /** The API reported US-only inference (`inference_geo: "us"`). */
  us_only: boolean
  requests: number
  input_tokens: number
  output_tokens: number
  cache_read_input_tokens: number
  cache_creation_5m_input_tokens: number
  cache_creation_1h_input_tokens: number
  web_search_requests: number
  web_fetch_requests: number
}

/**
 * Accumulated usage: counters per model (and billing tier), so list cost is priced per model, plus active
 * milliseconds (the runtime cost basis). Plain data: safe to persist as JSON or msgpack.
 */
export interface UsageTotals {
  entries: UsageEntry[]
  active_ms: number
}

export interface ListCostOptions {
  /** Include 0.08 USD per active hour. Default true; false for thread list cost (SPEC: it excludes runtime). */
  includeRuntime?: boolean
}

// ---------------------------------------------------------------------------------------------------------------
// Accumulation

export const emptyUsage = (): UsageTotals => ({ entries: [], active_ms: 0 })

/** A non-negative integer from provider data; anything else (null, NaN, negative, non-number) counts as 0. */
function count(x: unknown): number {
  return typeof x === 'number' && Number.isFinite(x) && x > 0 ? Math.floor(x) : 0
}

const sameTier = (e: UsageEntry, model: string, speed: UsageEntry['speed'], long: boolean, us: boolean) =>
  e.model === model && e.speed === speed && e.long_context === long && e.us_only === us

/**
 * Adds one model request's usage. Returns new totals; `totals` is not modified.
 * Cache writes: the per-lifetime breakdown when the provider gives one (any part of
 * `cache_creation_input_tokens` it does not account for counts as 5-minute writes); otherwise all 5-minute.
 */
export function addModelUsage(totals: UsageTotals, model: string, usage: ModelUsage): UsageTotals {
  const input = count(usage.input_tokens)
  const output = count(usage.output_tokens)
  const cacheRead = count(usage.cache_read_input_tokens)
  const cacheCreation = count(usage.cache_creation_input_tokens)
  let write1h = 0
  let write5m = cacheCreation
  if (usage.cache_creation) {
    write1h = count(usage.cache_creation.ephemeral_1h_input_tokens)
    const split5m = count(usage.cache_creation.ephemeral_5m_input_tokens)
    write5m = split5m + Math.max(0, cacheCreation - split5m - write1h)
  }
  const webSearch = count(usage.server_tool_use?.web_search_requests)
  const webFetch = count(usage.server_tool_use?.web_fetch_requests)

  const price = priceFor(model)
  const speed = usage.speed === 'fast' ? 'fast' : 'standard'
  const threshold = price?.longContext?.aboveInputTokens
  const long = threshold !== undefined && input + cacheRead + write5m + write1h > threshold
  const us = usage.inference_geo === 'us'

  const entries = totals.entries.slice()
  const i = entries.findIndex((e) => sameTier(e, model, speed, long, us))
  const base: UsageEntry =
    i >= 0
      ? entries[i]!
      : {
          model,
          speed,
          long_context: long,
          us_only: us,
          requests: 0,
          input_tokens: 0,
          output_tokens: 0,
          cache_read_input_tokens: 0,
          cache_creation_5m_input_tokens: 0,
          cache_creation_1h_input_tokens: 0,
          web_search_requests: 0,
          web_fetch_requests: 0,
        }
  const next: UsageEntry = {
    ...base,
    requests: base.requests + 1,
    input_tokens: base.input_tokens + input,
    output_tokens: base.output_tokens + output,
    cache_read_input_tokens: base.cache_read_input_tokens + cacheRead,
    cache_creation_5m_input_tokens: base.cache_creation_5m_input_tokens + write5m,
    cache_creation_1h_input_tokens: base.cache_creation_1h_input_tokens + write1h,
    web_search_requests: base.web_search_requests + webSearch,
    web_fetch_requests: base.web_fetch_requests + webFetch,
  }
  if (i >= 0) entries[i] = next
  else entries.push(next)
  return { entries, active_ms: totals.active_ms }
}

/** Adds active (running) time. Returns new totals; negative or non-finite `ms` adds nothing. */
export function addActiveMs(totals: UsageTotals, ms: number): UsageTotals {
  const add = typeof ms === 'number' && Number.isFinite(ms) && ms > 0 ? Math.round(ms) : 0
  return { entries: totals.entries, active_ms: totals.active_ms + add }
}

/**
 * Sums the token counters of several totals (for example every thread of a session) under the given active time.
 * Active time is not summed: a session's runtime basis is wall time with at least one thread running, overlap
 * counted once, which the caller measures.
 */
export function combineUsage(parts: readonly UsageTotals[], activeMs: number): UsageTotals {
  let out: UsageTotals = emptyUsage()
  for (const part of parts) {
    for (const e of part.entries) {
      const i = out.entries.findIndex((x) => sameTier(x, e.model, e.speed, e.long_context, e.us_only))
      if (i < 0) {
        out.entries.push({ ...e })
        continue
      }
      const x = out.entries[i]!
      out.entries[i] = {
        ...x,
        requests: x.requests + e.requests,
        input_tokens: x.input_tokens + e.input_tokens,
        output_tokens: x.output_tokens + e.output_tokens,
        cache_read_input_tokens: x.cache_read_input_tokens + e.cache_read_input_tokens,
        cache_creation_5m_input_tokens: x.cache_creation_5m_input_tokens + e.cache_creation_5m_input_tokens,
        cache_creation_1h_input_tokens: x.cache_creation_1h_input_tokens + e.cache_creation_1h_input_tokens,
        web_search_requests: x.web_search_requests + e.web_search_requests,
        web_fetch_requests: x.web_fetch_requests + e.web_fetch_requests,
      }
    }
  }
  out = addActiveMs(out, activeMs)
  return out
}

// ---------------------------------------------------------------------------------------------------------------
// List cost

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
  const search =
    (BigInt(e.web_search_requests) * microUsd(WEB_SEARCH_USD_PER_1000_REQUESTS) * 10n ** 8n * MS_PER_HOUR) / 1000n
  return tokens + search
}

/** Runtime charge in units: ms × (micro-USD per hour) × 1e8 × 3.6e6 / 3.6e6. */
const runtimeUnits = (ms: number): bigint =>
  BigInt(Math.max(0, Math.round(ms))) * microUsd(RUNTIME_USD_PER_ACTIVE_HOUR) * 10n ** 8n

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
    server_tool_use:
      webSearch === 0 && webFetch === 0 ? null : { web_search_requests: webSearch, web_fetch_requests: webFetch },
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Money

const AMOUNT = /^(?:0|[1-9][0-9]*)$/

/** `"2500"` → 2500 (cents). Undefined unless a non-negative integer string without sign or leading zeros. */
export function parseAmount(amount: unknown): number | undefined {
  if (typeof amount !== 'string' || !AMOUNT.test(amount)) return undefined
  const n = Number(amount)
  return Number.isSafeInteger(n) ? n : undefined
}

/** 2500 → `"2500"`. Throws RangeError on anything but a non-negative safe integer (a caller bug). */
export function formatAmount(cents: number): string {
  if (!Number.isSafeInteger(cents) || cents < 0) throw new RangeError(`not a whole number of cents: ${cents}`)
  return String(cents)
}

/** The budget's maximum in cents, or undefined when the object is not a valid USD limit. */
export function budgetCents(budget: unknown): number | undefined {
  if (typeof budget !== 'object' || budget === null) return undefined
  const b = budget as { type?: unknown; max_list_cost?: unknown }
  if (b.type !== 'limit' || typeof b.max_list_cost !== 'object' || b.max_list_cost === null) return undefined
  const m = b.max_list_cost as { amount?: unknown; currency?: unknown }
  if (m.currency !== 'USD') return undefined
  return parseAmount(m.amount)
}

export const budgetOf = (cents: number): Budget => ({
  type: 'limit',
  max_list_cost: { amount: formatAmount(cents), currency: 'USD' },
})

// ---------------------------------------------------------------------------------------------------------------
// Budget rules

export type BudgetErrorCode = 'budget_create_only' | 'budget_not_raised' | 'model_not_budgetable'

/** Spend so far: whole cents (the rounded list cost) or the exact usage, compared without rounding. */
export type Consumed = number | UsageTotals

const consumedUnits = (c: Consumed): bigint =>
  typeof c === 'number' ? BigInt(Math.max(0, Math.ceil(c))) * UNITS_PER_CENT : listCostUnits(c)

/** The first model (coordinator and every resolved roster member) without a list price, if any. */
const unbudgetable = (models: readonly ModelRef[]) => models.find((m) => !isBudgetable(m))

/** Session or deployment create: a budget requires every runnable model to be budgetable. */
export function checkBudgetCreate(input: {
  budget: number | null
  models: readonly ModelRef[]
}): BudgetErrorCode | undefined {
  if (input.budget === null) return undefined
  return unbudgetable(input.models) === undefined ? undefined : 'model_not_budgetable'
}

export interface BudgetUpdateInput {
  /** The session was created with a (non-null) budget. */
  createdWithBudget: boolean
  /** The budget has been removed (set to null) at some point. */
  budgetRemoved: boolean
  /** Current maximum in cents, null for none. */
  current: number | null
  /** Requested maximum in cents, null to remove. */
  next: number | null
  /**
   * List cost consumed so far. Pass the session's UsageTotals for the exact comparison SPEC asks for
   * ("strictly greater than the exact list cost already consumed"); a number is taken as whole cents.
   */
  consumedCents: Consumed
  /** The coordinator's and every resolved roster member's model. */
  models: readonly ModelRef[]
}

/**
 * SPEC "Update body rules" 5. Undefined when the update is allowed.
 * - a session created without a budget cannot add one, and a removed budget cannot be re-added: budget_create_only
 * - every model must have a list price: model_not_budgetable
 * - a changed maximum must be strictly greater than the list cost consumed: budget_not_raised
 * Removing the budget (next null) is always allowed; restating the current maximum is a no-op.
 */
export function checkBudgetUpdate(input: BudgetUpdateInput): BudgetErrorCode | undefined {
  const { next } = input
  if (next === null) return undefined
  if (!input.createdWithBudget || input.budgetRemoved || input.current === null) return 'budget_create_only'
  if (next === input.current) return undefined
  if (unbudgetable(input.models) !== undefined) return 'model_not_budgetable'
  if (BigInt(next) * UNITS_PER_CENT <= consumedUnits(input.consumedCents)) return 'budget_not_raised'
  return undefined
}

/**
 * Whether spend has reached the ceiling, so no further model request may be admitted. `budget` is a maximum in
 * cents or a Budget object; null (or an invalid object) means no ceiling.
 */
export function budgetReached(consumed: Consumed, budget: number | Budget | null): boolean {
  const max = budget === null ? undefined : typeof budget === 'number' ? budget : budgetCents(budget)
  if (max === undefined) return false
  return consumedUnits(consumed) >= BigInt(Math.max(0, Math.floor(max))) * UNITS_PER_CENT
}
