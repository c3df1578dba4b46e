import t from 'tap'
import { stack } from '../helpers/stack.js'
import { raw } from '../helpers/troupe.js'

/** Strict mode on the memory routes: the official client's beta (`agent-memory-2026-07-22`) or managed-agents'. */
const s = await stack({ strict: true })

t.test('the official client works unmodified; either beta is taken; none is a 400', async (t) => {
  const store = await s.client.beta.memoryStores.create({ name: 'strict' })
  const m = await s.client.beta.memoryStores.memories.create(store.id, { path: '/x', content: 'y' })
  t.equal((await s.client.beta.memoryStores.memories.retrieve(m.id, { memory_store_id: store.id })).content, 'y')
  const base = { authorization: 'Bearer k', 'anthropic-version': '2023-06-01' }
  const managed = await raw(s.url, 'GET', `/v1/memory_stores/${store.id}`, undefined, { ...base, 'anthropic-beta': 'managed-agents-2026-04-01' })
  t.equal(managed.status, 200, 'managed-agents-2026-04-01 is taken too')
  const none = await raw(s.url, 'GET', `/v1/memory_stores/${store.id}`, undefined, base)
  t.equal(none.status, 400)
  t.match(none.json.error.message, /agent-memory-2026-07-22 or managed-agents-2026-04-01/)
  const other = await raw(s.url, 'GET', `/v1/memory_stores/${store.id}`, undefined, { ...base, 'anthropic-beta': 'skills-2025-10-02' })
  t.equal(other.status, 400, 'another beta is not enough')
})
