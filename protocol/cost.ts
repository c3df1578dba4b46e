/**
 * Usage, list cost and budgets as they appear on the wire (WIRE §3, §6). How they are counted and priced is the
 * session kind's (actors/session/billing/); the amount format lives here so that the schemas that read it and
 * the code that writes it cannot disagree.
 */

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
