/**
 * Usage accounting (SPEC "Session": usage; WIRE §6, §7.2): counters per model and billing tier, summed from what
 * the provider reports. Pure functions over plain, serialisable records; nothing here throws on provider data.
 */
import type { ModelUsage } from '../../../protocol/session-events.js'
import { priceFor } from './prices.js'

/** One request's usage as the Messages API reports it (the SDK's `Usage` is assignable to this). */
export type { ModelUsage } from '../../../protocol/session-events.js'

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
