import t from 'tap'
import { until } from '../helpers/wait.js'
import { failure, isError, sessionStack } from '../sessions/_helpers.js'

/**
 * Memory stores are mounted only where tools run in an isolated sandbox (issue 42 point 4, as skills are): a server
 * whose sessions run tools on the local backend refuses, at creation, a session naming one, saying why.
 */

const s = await sessionStack({ TROUPE_SANDBOX: 'local' })
const { agents, sessions, environments, memoryStores } = s.client.beta

t.test('the local backend refuses sessions with memory stores at admission', async (t) => {
  const store = await memoryStores.create({ name: 'local' })
  const agent = await agents.create({ name: 'a', model: 'claude-sonnet-4-5', tools: [{ type: 'agent_toolset_20260401' }] } as any)
  const env = await environments.create({ name: 'e' } as any)
  const r = await failure(sessions.create({ agent: agent.id, environment_id: env.id, resources: [{ type: 'memory_store', memory_store_id: store.id }] } as any))
  isError(
    t,
    r,
    422,
    'invalid_request_error',
    /^resources\[0\]: memory stores are mounted only in sessions whose tools run in an isolated .*local backend/,
    'memory_stores_not_mounted',
  )
  await memoryStores.delete(store.id)
  t.pass('nothing attached')
})

t.test('a dream on the local backend fails naming why, and lets its store go', async (t) => {
  const { dreams } = s.client.beta
  const store = await memoryStores.create({ name: 'dreamt locally' })
  const updating = {
    inputs: [{ type: 'memory_store' as const, memory_store_id: store.id }],
    model: 'claude-sonnet-4-5',
    output_behavior: { type: 'update_existing' as const, memory_store_id: store.id },
  }
  const dream = await dreams.create(updating)
  const ended = await until(
    'the dream ends',
    async () => ((d) => d.status !== 'pending' && d.status !== 'running' && d)(await dreams.retrieve(dream.id)),
    60_000,
    100,
  )
  t.equal(ended.status, 'failed')
  t.equal(ended.error?.type, 'invalid_input')
  t.match(ended.error?.message, /memory stores are mounted only in sessions whose tools run in an isolated/)
  t.equal(ended.session_id, null, 'no session was made')
  t.ok(ended.ended_at)
  t.notOk(
    (await agents.list()).data.some((a: any) => a.name === `Dream ${dream.id}`),
    "the dream's agent is archived",
  )
  // A failed dream lets its store go: the next update_existing dream holds it.
  const next = await until(
    'the store let go',
    () =>
      dreams.create(updating).catch((e: any) => {
        if (e.status === 409) return undefined
        throw e
      }),
    30_000,
    100,
  )
  t.match(next.id, /^drm_/)
})
