import t from 'tap'
import type Anthropic from '@anthropic-ai/sdk'
import { formatAmount, parseAmount } from '../../protocol/cost.js'
import { budgetCents, budgetOf, budgetReached, checkBudgetCreate, checkBudgetUpdate, type BudgetUpdateInput } from '../../actors/session/billing/budget.js'
import { listCostCents, listCostUnits, UNITS_PER_CENT } from '../../actors/session/billing/list-cost.js'
import { PRICES, priceFor, isBudgetable } from '../../actors/session/billing/prices.js'
import { addActiveMs, addModelUsage, combineUsage, emptyUsage, type ModelUsage, type UsageTotals } from '../../actors/session/billing/usage.js'
import { toWireUsage } from '../../actors/session/billing/wire-usage.js'

const req = (u: Partial<ModelUsage>): ModelUsage => ({ input_tokens: 0, output_tokens: 0, ...u })
const one = (model: string, u: Partial<ModelUsage>): UsageTotals => addModelUsage(emptyUsage(), model, req(u))
const cents = (model: string, u: Partial<ModelUsage>) => listCostCents(one(model, u))

t.test('price table', async (t) => {
  const micro = (x: number) => Math.round(x * 1_000_000)
  for (const [id, p] of PRICES) {
    if (id === 'claude-3-haiku-20240307') continue // the page's published exception
    for (const r of [p, p.fast, p.longContext?.rates]) {
      if (!r) continue
      t.equal(micro(r.cacheWrite5m) * 4, micro(r.input) * 5, `${id}: 5m write = 1.25 × input`)
      t.equal(micro(r.cacheWrite1h), micro(r.input) * 2, `${id}: 1h write = 2 × input`)
      t.equal(micro(r.cacheRead) * 10, micro(r.input), `${id}: read = 0.1 × input`)
    }
  }
  t.match(priceFor('claude-opus-4-5'), { input: 5, output: 25, cacheWrite5m: 6.25, cacheWrite1h: 10, cacheRead: 0.5 })
  t.same(priceFor('claude-opus-4-5-20251101'), priceFor('claude-opus-4-5'), 'dated id = alias')
  t.same(priceFor('claude-sonnet-4-5-20250929'), priceFor('claude-sonnet-4-5'))
  t.same(priceFor('claude-haiku-4-5-20251001'), priceFor('claude-haiku-4-5'))
  t.match(priceFor('claude-opus-4-1'), { input: 15, output: 75 })
  t.match(priceFor('claude-opus-4-20250514'), { input: 15, output: 75 })
  t.match(priceFor('claude-sonnet-4-20250514'), { input: 3, output: 15 })
  t.match(priceFor('claude-haiku-4-5'), { input: 1, output: 5 })
  t.match(priceFor('claude-3-5-haiku-20241022'), { input: 0.8, output: 4, cacheWrite5m: 1, cacheRead: 0.08 })
  t.match(priceFor('claude-3-haiku-20240307'), { input: 0.25, cacheWrite5m: 0.3, cacheWrite1h: 0.5, cacheRead: 0.03 })

  const unpriced = ['claude-opus-5-5', 'claude-opus-4-8', 'claude-fable-5', 'claude-sonnet-4-5-latest', 'CLAUDE-OPUS-4-5']
  for (const id of [...unpriced, 'toString', '__proto__', '']) {
    t.equal(priceFor(id), undefined, `${JSON.stringify(id)} has no price`)
    t.equal(isBudgetable(id), false)
  }
  t.equal(isBudgetable('claude-sonnet-4-6'), true)
  t.equal(isBudgetable({ id: 'claude-sonnet-4-6' }), true)
  t.equal(isBudgetable({ id: 'claude-opus-4-6', speed: 'fast' }), true, 'fast mode has a price on Opus 4.6')
  t.equal(isBudgetable({ id: 'claude-opus-4-5', speed: 'fast' }), false, 'no published fast price')
  t.equal(isBudgetable({ id: 'claude-opus-4-5', speed: 'standard', inference_geo: 'us' }), true)
})

t.test('rounding: nearest cent, half up, once at the end', async (t) => {
  // Haiku 4.5 input is $1/MTok: 10,000 tokens = 1 cent.
  t.equal(cents('claude-haiku-4-5', { input_tokens: 4_999 }), 0, '0.4999 → 0')
  t.equal(cents('claude-haiku-4-5', { input_tokens: 5_000 }), 1, '0.5 → 1')
  t.equal(cents('claude-haiku-4-5', { input_tokens: 14_999 }), 1, '1.4999 → 1')
  t.equal(cents('claude-haiku-4-5', { input_tokens: 15_000 }), 2, '1.5 → 2')
  t.equal(cents('claude-haiku-4-5', { input_tokens: 25_000 }), 3, '2.5 → 3 (half up, not half even)')
  t.equal(cents('claude-haiku-4-5', {}), 0)

  // Cases where float arithmetic lands just under the half and would round down.
  t.equal(((950_000 * 0.3) / 1e6) * 100, 28.499999999999996, 'float drift exists')
  t.equal(cents('claude-sonnet-4-6', { cache_read_input_tokens: 950_000 }), 29, '28.5 exactly → 29')
  t.equal(cents('claude-opus-4-5', { cache_creation_input_tokens: 23_200 }), 15, '14.5 exactly → 15')
  t.equal(cents('claude-3-5-haiku-20241022', { cache_read_input_tokens: 1_812_500 }), 15, '14.5 exactly → 15')

  // Two models at 0.4 cents each: rounded separately they would be 0; together 0.8 → 1.
  let u = one('claude-haiku-4-5', { input_tokens: 4_000 })
  u = addModelUsage(u, 'claude-3-5-haiku-20241022', req({ input_tokens: 5_000 }))
  t.equal(listCostCents(u), 1)
  // Runtime plus tokens: 0.3 + 0.2 = 0.5 → 1.
  u = addActiveMs(one('claude-haiku-4-5', { input_tokens: 3_000 }), 90_000) // 90 s = 0.2 cents
  t.equal(listCostCents(u), 1)
  t.equal(listCostUnits(u), UNITS_PER_CENT / 2n, 'exact half cent')
})

t.test('per-model pricing with cache lifetimes', async (t) => {
  // Opus 4.5: every class priced at 5 cents.
  const opus = req({
    input_tokens: 10_000, // $5/MTok
    output_tokens: 2_000, // $25/MTok
    cache_creation_input_tokens: 13_000,
    cache_creation: { ephemeral_5m_input_tokens: 8_000, ephemeral_1h_input_tokens: 5_000 }, // $6.25, $10
    cache_read_input_tokens: 100_000, // $0.50
  })
  t.equal(listCostCents(addModelUsage(emptyUsage(), 'claude-opus-4-5', opus)), 25)
  t.equal(listCostCents(addModelUsage(emptyUsage(), 'claude-opus-4-5-20251101', opus)), 25, 'dated id')
  t.equal(listCostCents(addModelUsage(emptyUsage(), 'claude-opus-4-1', opus)), 75, 'Opus 4.1 is 3× Opus 4.5')

  // Without a breakdown every cache write is a 5-minute write.
  t.equal(cents('claude-opus-4-5', { cache_creation_input_tokens: 8_000 }), 5)
  t.equal(cents('claude-opus-4-5', { cache_creation_input_tokens: 8_000, cache_creation: null }), 5)
  // A breakdown that accounts for only part of the total: the rest counts as 5m.
  const partial = one('claude-opus-4-5', {
    cache_creation_input_tokens: 13_000,
    cache_creation: { ephemeral_1h_input_tokens: 5_000 },
  })
  t.same(toWireUsage(partial).cache_creation, { ephemeral_5m_input_tokens: 8_000, ephemeral_1h_input_tokens: 5_000 })
  t.equal(listCostCents(partial), 10)

  // 1h only.
  const oneHour = { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 50_000 }
  t.equal(cents('claude-sonnet-4-6', { cache_creation_input_tokens: 50_000, cache_creation: oneHour }), 30)

  // Each model priced at its own rates.
  let u = one('claude-haiku-4-5', { input_tokens: 100_000, output_tokens: 10_000 }) // 10 + 5
  u = addModelUsage(u, 'claude-opus-4-1', req({ input_tokens: 100_000, output_tokens: 10_000 })) // 150 + 75
  u = addModelUsage(u, 'claude-haiku-4-5', req({ input_tokens: 100_000 })) // 10
  t.equal(listCostCents(u), 250)
  t.equal(u.entries.length, 2, 'one entry per model')
  t.equal(u.entries[0]!.requests, 2)

  // Sonnet 4 / 4.5 long-context rates above 200K prompt tokens: the whole request at $6 / $22.50.
  t.equal(cents('claude-sonnet-4-5', { input_tokens: 200_000, output_tokens: 10_000 }), 75, 'at the threshold: standard')
  t.equal(cents('claude-sonnet-4-5', { input_tokens: 250_000, output_tokens: 10_000 }), 173, '150 + 22.5 → 173')
  t.equal(
    cents('claude-sonnet-4-20250514', { input_tokens: 1_000, cache_read_input_tokens: 200_000 }),
    13,
    'cache reads count toward the threshold: 0.6 + 12 → 13',
  )
  t.equal(cents('claude-sonnet-4-6', { input_tokens: 250_000, output_tokens: 10_000 }), 90, 'Sonnet 4.6: standard rates')

  // Fast mode and US-only inference on Opus 4.6.
  t.equal(cents('claude-opus-4-6', { input_tokens: 100_000, output_tokens: 10_000 }), 75)
  t.equal(cents('claude-opus-4-6', { input_tokens: 100_000, output_tokens: 10_000, speed: 'fast' }), 450)
  t.equal(cents('claude-opus-4-6', { input_tokens: 1_000_000, inference_geo: 'us' }), 550, '× 1.1')
  t.equal(cents('claude-opus-4-6', { input_tokens: 1_000_000, inference_geo: 'global' }), 500)
  t.equal(cents('claude-opus-4-5', { input_tokens: 1_000_000, inference_geo: 'us' }), 500, 'no multiplier listed')
  t.equal(cents('claude-opus-4-5', { input_tokens: 1_000_000, speed: 'fast' }), 500, 'unpriced fast: standard rates')
})

t.test('runtime: 0.08 USD per active hour', async (t) => {
  const at = (ms: number) => listCostCents(addActiveMs(emptyUsage(), ms))
  t.equal(at(3_600_000), 8)
  t.equal(at(1_800_000), 4)
  t.equal(at(10 * 3_600_000), 80)
  t.equal(at(225_000), 1, '3 min 45 s = 0.5 cent → 1')
  t.equal(at(224_999), 0)
  t.equal(at(0), 0)
  t.equal(at(-5_000), 0, 'negative time adds nothing')
  let u = addActiveMs(emptyUsage(), 1_000_000)
  u = addActiveMs(u, 800_000)
  t.equal(u.active_ms, 1_800_000, 'accumulates')
  t.equal(listCostCents(u), 4)
  t.equal(listCostCents(u, { includeRuntime: false }), 0, 'thread list cost excludes runtime')
})

t.test('web search: USD 10 per 1,000; web fetch free', async (t) => {
  const u = one('claude-sonnet-4-6', { server_tool_use: { web_search_requests: 3, web_fetch_requests: 5 } })
  t.equal(listCostCents(u), 3)
  t.same(toWireUsage(u).server_tool_use, { web_search_requests: 3, web_fetch_requests: 5 })
  t.equal(cents('claude-sonnet-4-6', { server_tool_use: { web_fetch_requests: 40 } }), 0)
  t.equal(cents('claude-sonnet-4-6', { server_tool_use: null }), 0)
  let many = emptyUsage()
  for (let i = 0; i < 150; i++) many = addModelUsage(many, 'claude-haiku-4-5', req({ server_tool_use: { web_search_requests: 1 } }))
  t.equal(listCostCents(many), 150)
  t.equal(toWireUsage(one('claude-haiku-4-5', {})).server_tool_use, null, 'null when no server tool ran')
})

t.test('a model without a price: tokens visible, cost zero', async (t) => {
  let u = one('claude-opus-5-5', {
    input_tokens: 1_000_000,
    output_tokens: 500_000,
    cache_read_input_tokens: 10,
    cache_creation_input_tokens: 7,
    server_tool_use: { web_search_requests: 9 },
  })
  t.equal(listCostCents(u), 0)
  u = addActiveMs(u, 3_600_000)
  u = addModelUsage(u, 'claude-haiku-4-5', req({ input_tokens: 10_000 }))
  const w = toWireUsage(u)
  t.same(w, {
    input_tokens: 1_010_000,
    output_tokens: 500_000,
    cache_read_input_tokens: 10,
    cache_creation: { ephemeral_5m_input_tokens: 7, ephemeral_1h_input_tokens: 0 },
    active_seconds: 3600,
    list_cost: { amount: '9', currency: 'USD' },
    server_tool_use: { web_search_requests: 9, web_fetch_requests: 0 },
  })
})

t.test('accumulation is pure and tolerant of provider nulls', async (t) => {
  const start = emptyUsage()
  const a = addModelUsage(start, 'claude-haiku-4-5', req({ input_tokens: 10 }))
  const b = addModelUsage(a, 'claude-haiku-4-5', req({ input_tokens: 5 }))
  t.same(start, emptyUsage(), 'input not modified')
  t.equal(a.entries[0]!.input_tokens, 10)
  t.equal(b.entries[0]!.input_tokens, 15)
  t.equal(addActiveMs(a, 10).active_ms, 10)
  t.equal(a.active_ms, 0)

  // The SDK's own Usage type is accepted as is.
  const sdk: Anthropic.Messages.Usage = {
    input_tokens: 100,
    output_tokens: 20,
    cache_creation_input_tokens: null,
    cache_read_input_tokens: null,
    cache_creation: null,
    server_tool_use: null,
    inference_geo: null,
    output_tokens_details: null,
    service_tier: 'standard',
    speed: null,
  }
  const s = toWireUsage(addModelUsage(emptyUsage(), 'claude-haiku-4-5', sdk))
  t.same([s.input_tokens, s.output_tokens, s.cache_read_input_tokens, s.cache_creation.ephemeral_5m_input_tokens], [100, 20, 0, 0])

  const junk = { input_tokens: -4, output_tokens: Number.NaN, cache_read_input_tokens: 2.7 } as ModelUsage
  t.same(toWireUsage(addModelUsage(emptyUsage(), 'claude-haiku-4-5', junk)), {
    input_tokens: 0,
    output_tokens: 0,
    cache_read_input_tokens: 2,
    cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
    active_seconds: 0,
    list_cost: { amount: '0', currency: 'USD' },
    server_tool_use: null,
  })
  t.same(JSON.parse(JSON.stringify(b)), b, 'plain JSON data')
})

t.test('combineUsage sums threads, takes session active time', async (t) => {
  const t1 = addActiveMs(one('claude-haiku-4-5', { input_tokens: 4_000 }), 3_600_000)
  const t2 = addActiveMs(one('claude-haiku-4-5', { input_tokens: 4_000, output_tokens: 1 }), 3_600_000)
  const t3 = one('claude-opus-4-5', { output_tokens: 4 })
  const s = combineUsage([t1, t2, t3], 3_600_000)
  t.equal(s.entries.length, 2)
  t.equal(s.entries[0]!.input_tokens, 8_000)
  t.equal(s.entries[0]!.requests, 2)
  t.equal(s.active_ms, 3_600_000, 'not the sum of thread times')
  t.equal(listCostCents(s), 9, '0.8 + 0.0005 + 0.01 + 8 → 9')
  t.equal(listCostCents(t1, { includeRuntime: false }), 0, 'each thread rounded independently')
  t.equal(t1.entries[0]!.input_tokens, 4_000, 'parts not modified')
})

t.test('toWireUsage', async (t) => {
  let u = one('claude-sonnet-4-6', {
    input_tokens: 1_234,
    output_tokens: 567,
    cache_read_input_tokens: 89,
    cache_creation_input_tokens: 30,
    cache_creation: { ephemeral_5m_input_tokens: 10, ephemeral_1h_input_tokens: 20 },
  })
  u = addActiveMs(u, 12_345)
  const w = toWireUsage(u)
  t.equal(w.active_seconds, 12.345)
  t.same(w.cache_creation, { ephemeral_5m_input_tokens: 10, ephemeral_1h_input_tokens: 20 })
  t.same(w.list_cost, { amount: '1', currency: 'USD' }, '0.3702 + 0.8505 + 0.00267 + 0.00375 + 0.012 + 0.0274 → 1')
  t.same(toWireUsage(emptyUsage()).list_cost, { amount: '0', currency: 'USD' })
  t.same(toWireUsage(addActiveMs(emptyUsage(), 3_600_000), { includeRuntime: false }).list_cost, { amount: '0', currency: 'USD' })
})

t.test('MonetaryAmount', async (t) => {
  t.equal(parseAmount('2500'), 2500)
  t.equal(parseAmount('0'), 0)
  t.equal(parseAmount('1'), 1)
  t.equal(parseAmount('9007199254740991'), Number.MAX_SAFE_INTEGER)
  const badStrings = ['01', '00', '-5', '-0', '+5', '1.5', '1.0', 'abc', '', ' 5', '5 ', '1e3', '0x10', '2,500']
  for (const bad of [...badStrings, '9007199254740992', '١٢']) {
    t.equal(parseAmount(bad), undefined, `rejects ${JSON.stringify(bad)}`)
  }
  for (const bad of [2500, null, undefined, {}, ['1']]) t.equal(parseAmount(bad), undefined, `rejects ${String(bad)}`)
  t.equal(formatAmount(2500), '2500')
  t.equal(formatAmount(0), '0')
  t.throws(() => formatAmount(-1))
  t.throws(() => formatAmount(1.5))
  t.throws(() => formatAmount(Number.NaN))
  t.same(budgetOf(2500), { type: 'limit', max_list_cost: { amount: '2500', currency: 'USD' } })
  t.equal(budgetCents(budgetOf(2500)), 2500)
  t.equal(budgetCents({ type: 'limit', max_list_cost: { amount: '10', currency: 'EUR' } }), undefined)
  t.equal(budgetCents({ type: 'limit', max_list_cost: { amount: '010', currency: 'USD' } }), undefined)
  t.equal(budgetCents({ type: 'cap', max_list_cost: { amount: '10', currency: 'USD' } }), undefined)
  t.equal(budgetCents(null), undefined)
})

t.test('budget rules', async (t) => {
  const base: BudgetUpdateInput = {
    createdWithBudget: true,
    budgetRemoved: false,
    current: 1000,
    next: 2000,
    consumedCents: 500,
    models: ['claude-sonnet-4-6', { id: 'claude-haiku-4-5-20251001' }],
  }
  const check = (o: Partial<BudgetUpdateInput>) => checkBudgetUpdate({ ...base, ...o })

  t.equal(check({}), undefined, 'raise above consumed')
  t.equal(check({ next: 600 }), undefined, 'lower, but still above consumed')
  t.equal(check({ next: 501 }), undefined)
  t.equal(check({ next: 500 }), 'budget_not_raised', 'equal to consumed')
  t.equal(check({ next: 100 }), 'budget_not_raised', 'below consumed')
  t.equal(check({ next: 0, consumedCents: 0 }), 'budget_not_raised', 'zero is not greater than zero')
  t.equal(check({ next: 1000, consumedCents: 5000 }), undefined, 'restating the current maximum changes nothing')
  t.equal(check({ next: null }), undefined, 'remove')
  t.equal(check({ next: null, consumedCents: 99999 }), undefined, 'remove whatever was spent')

  t.equal(check({ createdWithBudget: false, current: null }), 'budget_create_only', 'cannot add a budget')
  t.equal(check({ createdWithBudget: false, current: null, next: null }), undefined, 'null on an unbudgeted session')
  t.equal(check({ budgetRemoved: true, current: null }), 'budget_create_only', 'cannot re-add a removed budget')
  t.equal(check({ budgetRemoved: true, current: null, next: null }), undefined)

  t.equal(check({ models: ['claude-sonnet-4-6', 'claude-opus-5-5'] }), 'model_not_budgetable')
  t.equal(check({ models: ['my-router/alias'] }), 'model_not_budgetable')
  t.equal(check({ models: [{ id: 'claude-sonnet-4-6', speed: 'fast' }] }), 'model_not_budgetable')
  t.equal(check({ models: [{ id: 'claude-opus-4-6', speed: 'fast' }] }), undefined)

  // Exact comparison against the unrounded list cost. Haiku 4.5 input: 1 token = 0.0001 cent.
  const spent996 = one('claude-haiku-4-5', { input_tokens: 996_000 }) // 99.6 cents, shown as "100"
  const spent1004 = one('claude-haiku-4-5', { input_tokens: 1_004_000 }) // 100.4 cents, shown as "100"
  t.equal(listCostCents(spent996), 100)
  t.equal(listCostCents(spent1004), 100)
  t.equal(check({ next: 100, consumedCents: spent996 }), undefined, '100 > 99.6')
  t.equal(check({ next: 100, consumedCents: spent1004 }), 'budget_not_raised', '100 ≤ 100.4')
  t.equal(check({ next: 101, consumedCents: spent1004 }), undefined)
  t.equal(check({ next: 100, consumedCents: 100 }), 'budget_not_raised', 'whole cents')

  t.equal(checkBudgetCreate({ budget: 2500, models: ['claude-opus-4-5-20251101', 'claude-haiku-4-5'] }), undefined)
  t.equal(checkBudgetCreate({ budget: 2500, models: ['claude-opus-4-5', 'claude-opus-4-8'] }), 'model_not_budgetable')
  t.equal(checkBudgetCreate({ budget: null, models: ['claude-opus-4-8'] }), undefined, 'no budget, no price needed')

  t.equal(budgetReached(499, 500), false)
  t.equal(budgetReached(500, 500), true)
  t.equal(budgetReached(501, 500), true)
  t.equal(budgetReached(10_000, null), false, 'no ceiling')
  t.equal(budgetReached(0, 0), true, 'zero ceiling is reached at once')
  t.equal(budgetReached(2500, budgetOf(2500)), true)
  t.equal(budgetReached(2499, budgetOf(2500)), false)
  t.equal(budgetReached(spent996, 100), false, '99.6 < 100')
  t.equal(budgetReached(spent1004, 100), true)
  t.equal(budgetReached(addActiveMs(emptyUsage(), 3_600_000), 8), true, 'runtime counts toward the budget')
})
