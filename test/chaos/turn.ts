// One turn outside the load, for the checks: a message through the official client, then the session's newest events
// polled until the turn it started is over.
import type Anthropic from '@anthropic-ai/sdk'

/** What one turn stored after its message, or why it did not end. */
export type TurnOutcome = { events: any[] } | { error: string }

const POLL_MS = 250
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** `key`: the send's Idempotency-Key, so a send retried after its answer was lost starts no second turn. */
export async function oneTurn(client: Anthropic, session: string, text: string, boundMs = 30_000, key?: string): Promise<TurnOutcome> {
  const deadline = Date.now() + boundMs
  let marker: string | undefined
  try {
    const sent = await client.beta.sessions.events.send(
      session,
      { events: [{ type: 'user.message', content: [{ type: 'text', text }] }] } as any,
      key === undefined ? undefined : { headers: { 'Idempotency-Key': key } },
    )
    marker = (sent.data as Array<{ id: string }>).at(-1)?.id
  } catch (err) {
    return { error: `the message was not taken: ${(err as Error).message}` }
  }
  while (Date.now() < deadline) {
    try {
      const page = await client.beta.sessions.events.list(session, { order: 'desc', limit: 50 } as any)
      const newest = page.data as any[]
      const i = newest.findIndex((e) => e.id === marker)
      if (i > 0 && newest[i].processed_at && newest[0].type === 'session.status_idle') return { events: newest.slice(0, i).reverse() }
    } catch {}
    await sleep(POLL_MS)
  }
  return { error: `the turn did not end within ${boundMs} ms` }
}

/** The text of a turn's bash results, in order. */
export const toolResults = (events: any[]) =>
  events
    .filter((e) => e.type === 'agent.tool_result')
    .map((e) => ({ text: (e.content as Array<{ text?: string }>).map((c) => c.text ?? '').join('\n'), isError: !!e.is_error }))
