/** Prices, usage, list cost and the budget's rules. */
export { budgetCents, budgetReached, checkBudgetCreate, checkBudgetUpdate } from './budget.js'
export { listCostCents, listCostUsd } from './list-cost.js'
export type { ModelRef } from './prices.js'
export { addActiveMs, addModelUsage, combineUsage, emptyUsage, type ModelUsage, type UsageTotals } from './usage.js'
export { toWireUsage } from './wire-usage.js'
