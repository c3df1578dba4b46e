import t from 'tap'
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
