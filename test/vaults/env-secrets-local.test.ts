import t from 'tap'
import { agentAndEnv, collect, isIdle, sessionStack } from '../sessions/_helpers.js'
import { holds, vaults } from './_env-secrets.js'
import { keyringFile, newKey } from './_helpers.js'

/**
 * On the local backend (no egress proxy) a session's `environment_variable` credentials cannot be kept out of reach:
 * no variable is set, neither secret nor placeholder, and a `session.error` says so once; the tools still run.
 */
const s = await sessionStack({ TROUPE_SANDBOX: 'local', TROUPE_VAULT_KEYRING_FILE: keyringFile([{ id: 'k1', key: newKey() }]) })

t.test('local backend: no variable, said once', async (t) => {
  const { client } = s
  const { agent, env } = await agentAndEnv(client, { tools: [{ type: 'agent_toolset_20260401' }] })
  const session = await client.beta.sessions.create({ agent: agent.id, environment_id: env.id, vault_ids: await vaults(client) } as any)
  s.model.enqueue(
    { steps: [{ type: 'tool_use', name: 'bash', input: { command: 'env' } }] },
    { steps: [{ type: 'tool_use', name: 'bash', input: { command: 'echo "[$API_KEY]"' } }] },
    { steps: [{ type: 'text', text: 'done' }] },
  )
  const stream = await client.beta.sessions.events.stream(session.id)
  await client.beta.sessions.events.send(session.id, { events: [{ type: 'user.message', content: [{ type: 'text', text: 'go' }] }] } as any)
  const events = await collect(stream, isIdle, 60_000)
  const results = events.filter((e) => e.type === 'agent.tool_result').map((e) => (e.content as any[]).map((c) => c.text).join(''))
  t.same(holds(JSON.stringify(events)), [], 'no secret anywhere in the events')
  t.notMatch(results[0], /API_KEY|troupe-secret-/, 'no variable set')
  t.match(results[1], '[]')
  const errors = events.filter((e) => e.type === 'session.error')
  t.equal(errors.length, 1, 'said once')
  t.match(errors[0]?.error?.message, /environment variables .*\(API_KEY, SHADOW_KEY, OTHER_KEY\) are not set: .*isolated sandbox/)
})
