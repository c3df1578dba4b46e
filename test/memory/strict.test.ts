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

t.test('dreams: the official client works unmodified; another beta is a 400 naming dreaming-2026-04-21', async (t) => {
  const listed = await s.client.beta.dreams.list()
  t.same(listed.data, [])
  const base = { authorization: 'Bearer k', 'anthropic-version': '2023-06-01' }
  const ok = await raw(s.url, 'GET', '/v1/dreams', undefined, { ...base, 'anthropic-beta': 'dreaming-2026-04-21' })
  t.equal(ok.status, 200)
  for (const beta of [undefined, 'managed-agents-2026-04-01', 'agent-memory-2026-07-22']) {
    const r = await raw(s.url, 'GET', '/v1/dreams', undefined, beta ? { ...base, 'anthropic-beta': beta } : base)
    t.equal(r.status, 400, `${beta ?? 'no beta'} is refused`)
    t.match(r.json.error.message, /dreaming-2026-04-21/)
  }
})
