import type Anthropic from '@anthropic-ai/sdk'
import t from 'tap'
import type { RecordedRequest, ScriptedReply } from '../fakes/model-server.js'
import { clientFor, startTroupe } from '../helpers/troupe.js'
import { reader, type SessionStack } from '../sessions/_helpers.js'

/**
 * What a coordinator whose system prompt is `system` says: its first turn's request sends `message` to `agent`, every
 * later request answers `done`. Undefined for another agent's request (the caller's handler answers it).
 */
export function delegating(system: string, agent: string, message: string, done = 'ok') {
  let turns = 0
  return (req: RecordedRequest): ScriptedReply | undefined => {
    if (req.body.system !== system) return undefined
    return ++turns === 1 ? { steps: [{ type: 'tool_use', name: 'send_to_agent', input: { agent, message } }] } : { steps: [{ type: 'text', text: done }] }
  }
}

/** Opens the session's stream, then sends `events`: a reader of what follows. */
export async function sent(client: Anthropic, session: string, events: unknown[]) {
  const r = reader(await client.beta.sessions.events.stream(session))
  await client.beta.sessions.events.send(session, { events } as any)
  return r
}

/** The stack's server SIGKILLed and another started on the same NATS and model (killed when the test ends): its client. */
export async function restarted(s: SessionStack): Promise<Anthropic> {
  await s.troupe.kill()
  const again = await startTroupe({
    natsUrl: s.nats.url,
    env: { TROUPE_MODEL_BASE_URL: s.model.url, ANTHROPIC_API_KEY: 'fake-key', TROUPE_MODEL_RETRY_BASE_MS: '20' },
  })
  t.teardown(() => again.killNow())
  return clientFor(again.url, { maxRetries: 3 })
}
