import type { NatsConnection } from '@nats-io/transport-node'
import { SESSIONS_TOKEN_TTL_S, type SessionsTokenClaims } from '../protocol/sessions-token.js'
import { WORK_CLAIM_ENDED } from '../protocol/subjects.js'

/**
 * The claims this gateway heard end (`WORK_CLAIM_ENDED`), so their sessions tokens are refused on the session's routes
 * at once, without asking anyone. Each is kept as long as a token of it could live. One that ended while this gateway
 * was not listening (it started later, or its connection was down) is not known here: the session kind asks the work
 * item's owner on each such request (`claim.live`), and heartbeat and stop check the claim at the item, always.
 */
export class EndedClaims {
  /** `<work id>.<claim>` → when it may be forgotten (ms); insertion order is expiry order. */
  private readonly ended = new Map<string, number>()

  constructor(nc: NatsConnection) {
    nc.subscribe(WORK_CLAIM_ENDED, {
      callback: (err, msg) => {
        if (err) return
        try {
          const { w, n } = msg.json<{ w: unknown; n: unknown }>()
          if (typeof w === 'string' && w.length <= 128 && Number.isSafeInteger(n)) this.add(`${w}.${n}`)
        } catch {
          // Not ours: ignored.
        }
      },
    })
  }

  has(c: SessionsTokenClaims): boolean {
    return this.ended.has(`${c.w}.${c.n}`)
  }

  private add(key: string): void {
    const now = Date.now()
    for (const [k, until] of this.ended) {
      if (until > now) break
      this.ended.delete(k)
    }
    this.ended.set(key, now + SESSIONS_TOKEN_TTL_S * 1000)
  }
}
