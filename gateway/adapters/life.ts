import { LINGER_BYTES, LINGER_MS, type Unread } from '../transport.js'

/**
 * Whether a response may still be written, and who waits to hear that the client went away: the same
 * bookkeeping in both adapters (uWS forbids touching a response once it was aborted or ended).
 */
export interface Life {
  /** The client went away before the response was complete (or the transport threw on a use of it). */
  aborted: boolean
  /** The response ended (or the connection was closed by us). */
  ended: boolean
  /** Run once on abort: the gateway's callback and the adapter's own (a body being read, a lingering close). */
  hooks: Set<() => void>
}

/** The response is unusable: note it and tell everyone waiting on it. */
export function gone(life: Life): void {
  if (life.aborted) return
  life.aborted = true
  for (const hook of [...life.hooks]) hook()
  life.hooks.clear()
}

/**
 * What the exchanges of both adapters share: their response's Life, the gateway's abort callback (`Exchange.onAbort`)
 * and `Exchange.close`. The adapter gives its own way of closing the connection.
 */
export abstract class LifeExchange {
  protected readonly life: Life = { aborted: false, ended: false, hooks: new Set() }
  private userAbort: (() => void) | undefined

  /** Closes the connection at once, however the transport does it. */
  protected abstract closeConnection(): void

  onAbort(fn: () => void): void {
    if (this.userAbort) this.life.hooks.delete(this.userAbort)
    this.userAbort = fn
    if (this.life.aborted) {
      fn()
      return
    }
    this.life.hooks.add(fn)
  }

  close(): void {
    if (this.life.aborted || this.life.ended) return
    this.life.ended = true
    this.closeConnection()
    gone(this.life)
  }
}

/**
 * The bound of a lingering close, the same on both transports: `done` runs once, with whether the client
 * finished sending the unread body, when it did, past LINGER_BYTES dropped or LINGER_MS, or on abort; it is not
 * run once the response is unusable. The adapter then completes the response or closes the connection.
 */
export function whenUnreadEnds(life: Life, unread: Unread, done: (ended: boolean) => void): void {
  let finished = false
  const finish = () => {
    if (finished) return
    finished = true
    clearTimeout(timer)
    unread.onProgress = undefined
    life.hooks.delete(finish)
    if (life.aborted || life.ended) return
    done(unread.ended)
  }
  const timer = setTimeout(finish, LINGER_MS)
  timer.unref()
  life.hooks.add(finish)
  unread.onProgress = () => {
    if (unread.ended || unread.dropped > LINGER_BYTES) finish()
  }
}
