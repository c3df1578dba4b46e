/**
 * Budgets (SPEC "Session": budget; "Create rules" 6, "Update body rules" 5): reading a budget's ceiling, the
 * create and update rules, and whether spend has reached the ceiling. The rules return an error code for the
 * caller to map onto the error catalog; spend is compared exactly, not rounded.
 */
import { formatAmount, parseAmount, type Budget } from '../../../protocol/cost.js'
import { listCostUnits, UNITS_PER_CENT } from './list-cost.js'
import { isBudgetable, type ModelRef } from './prices.js'
import type { UsageTotals } from './usage.js'

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

export type BudgetErrorCode = 'budget_create_only' | 'budget_not_raised' | 'model_not_budgetable'

/** Spend so far: whole cents (the rounded list cost) or the exact usage, compared without rounding. */
export type Consumed = number | UsageTotals

const consumedUnits = (c: Consumed): bigint => (typeof c === 'number' ? BigInt(Math.max(0, Math.ceil(c))) * UNITS_PER_CENT : listCostUnits(c))

/** The first model (coordinator and every resolved roster member) without a list price, if any. */
const unbudgetable = (models: readonly ModelRef[]) => models.find((m) => !isBudgetable(m))

/** Session or deployment create: a budget requires every runnable model to be budgetable. */
export function checkBudgetCreate(input: { budget: number | null; models: readonly ModelRef[] }): BudgetErrorCode | undefined {
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
