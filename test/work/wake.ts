import type Anthropic from '@anthropic-ai/sdk'

/** The longest block a poll may ask for (1000 is refused). */
const BLOCK_MS = 999
/**
 * An attempt tells only when the item was queued well inside the poll's block: a wake then answers before the block
 * ends, and a poll that was not woken answers only at its end (it looks once more then, so the item in its answer
 * alone proves nothing). A create slower than this (a loaded machine) leaves the attempt undecided: try again.
 */
const DECIDES_WITHIN_MS = 500
const ATTEMPTS = 8

export interface Wake {
  /** The item's session id, and the poll's answer. */
  queued: string
  answered: string | undefined
  /** The poll's answer as it came. */
  item: Awaited<ReturnType<Anthropic['beta']['environments']['work']['poll']>>
  /** From the poll's sending to its answer; under BLOCK_MS is a wake-up (the server's block started later). */
  answeredAfterMs: number
  /** Undecided attempts before this one. */
  undecided: number
}

/**
 * A poll blocked through `poller` while `queue` (a session create through some host) queues one item: whether the
 * queue woke the poll, told apart from the poll's last look at its block's end by when each answered.
 */
export async function wakeOf(poller: Anthropic, envId: string, queue: () => Promise<{ id: string }>): Promise<Wake> {
  for (let undecided = 0; ; undecided++) {
    // Items of undecided attempts first, so that the next answer is this attempt's.
    while (await poller.beta.environments.work.poll(envId)) {}
    const sent = Date.now()
    const waiting = poller.beta.environments.work.poll(envId, { block_ms: BLOCK_MS })
    await new Promise((r) => setTimeout(r, 100))
    const session = await queue()
    const queuedAfter = Date.now() - sent
    const got = await waiting
    const answeredAfterMs = Date.now() - sent
    if (queuedAfter < DECIDES_WITHIN_MS || undecided === ATTEMPTS - 1)
      return { queued: session.id, answered: got?.data.id, item: got, answeredAfterMs, undecided }
  }
}
