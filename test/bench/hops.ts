// Counts the NATS requests one HTTP call causes, by watching every subject (`>`) on a separate connection while
// the call runs alone: actor requests (`troupe.<kind>…`), JetStream API calls (`$JS.API…`: KV and message reads,
// consumer creation) and stored writes (KV puts on `$KV…`, event appends on `troupe.events…`). Replies, consumer
// deliveries and republished events are not requests. Placement traffic (leases, host heartbeats) and the
// deployment scheduler's heartbeat (`troupe start` runs a scheduler) are left out: they run on their own clock, not
// per call.
import { connect } from '@nats-io/transport-node'
import { sleep } from './bed.js'

export interface Hops {
  actor: number
  jsApi: number
  writes: number
  subjects: string[]
}

const PLACEMENT = /troupe_(leases|hosts|placement|orchestrators)/

export const hopLine = (h: Hops) =>
  `${h.actor} actor requests + ${h.jsApi} JetStream API calls + ${h.writes} writes = ${h.actor + h.jsApi + h.writes} round trips`

/** How long after the call's answer requests it caused may still arrive (writes that do not hold the answer up). */
const SETTLE_MS = 300

/** Runs `call` with nothing else in flight and counts what it sent. */
export async function countHops(natsUrl: string, call: () => Promise<unknown>): Promise<Hops> {
  const nc = await connect({ servers: natsUrl })
  const h: Hops = { actor: 0, jsApi: 0, writes: 0, subjects: [] }
  try {
    nc.subscribe('>', {
      callback: (_e, m) => {
        const s = m.subject
        // Consumer deliveries (a watch) arrive on the stored subject with a $JS.ACK reply: not requests.
        if (!m.reply || m.reply.startsWith('$JS.ACK') || PLACEMENT.test(s) || s.startsWith('_INBOX.') || s.startsWith('$JS.FC')) return
        if (s.startsWith('$JS.API.')) h.jsApi++
        else if (s.startsWith('$KV.') || s.startsWith('troupe.events.')) h.writes++
        else if (s.startsWith('troupe.')) h.actor++
        else return
        h.subjects.push(s)
      },
    })
    await nc.flush()
    await call()
    await sleep(SETTLE_MS)
    await nc.flush()
  } finally {
    await nc.close()
  }
  return h
}
