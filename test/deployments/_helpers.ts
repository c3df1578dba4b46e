import type Anthropic from '@anthropic-ai/sdk'
import { sessionStack, type SessionStack } from '../sessions/_helpers.js'

export { failure } from '../agents/_util.js'

/** A deployment's one required initial event. */
export const HELLO = [{ type: 'user.message', content: [{ type: 'text', text: 'hello' }] }]

/** nats-server + `troupe serve` with a fake Messages API (runs create sessions, whose turns then run). */
export const deploymentStack = (env: Record<string, string> = {}): Promise<SessionStack> => sessionStack(env)

/** An agent and an environment to deploy. */
export async function agentAndEnv(client: Anthropic) {
  const agent = await client.beta.agents.create({ name: 'deployed', model: 'claude-sonnet-4-5' })
  const env = await client.beta.environments.create({ name: 'env' })
  return { agent, env }
}

/** A deployment of a new agent in a new environment; `extra` fields go in the create body. */
export async function deploy(client: Anthropic, extra: Record<string, unknown> = {}) {
  const { agent, env } = await agentAndEnv(client)
  const d = await client.beta.deployments.create({ name: 'd', agent: agent.id, environment_id: env.id, initial_events: HELLO, ...extra } as any)
  return { agent, env, deployment: d }
}
