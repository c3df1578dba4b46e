import { createInbox, errors, NoRespondersError, TimeoutError, type Msg, type MsgHdrs, type NatsConnection, type Subscription } from '@nats-io/nats-core'
import { JetStreamApiError, type PubAck } from '@nats-io/jetstream'

/** How often publishes past their deadline are failed: the timeouts' granularity. */
const SWEEP_MS = 100

interface Pending {
  resolve(ack: PubAck): void
  reject(err: Error): void
  deadline: number
  subject: string
}

/**
 * JetStream publishes for the hot path: a session's appends and the records its actors write, the writes on the
 * critical path of every turn and every create. nats.js makes each request an object with an Error built up front
 * (`RequestError("cancelled")`, even with async traces off: about 3 % of a turn's CPU), a timer and a deferred,
 * through the JetStream client's own wrapping. Here one wildcard inbox answers them all, one interval fails those
 * that ran past their deadline (to within `SWEEP_MS`), and the acknowledgement is parsed once.
 *
 * Errors are nats.js's own classes, so what classifies them (kit/nats-errors.ts) and the compare-and-set checks work
 * unchanged: `JetStreamApiError` when the server refused the write (a wrong last sequence, say), `TimeoutError` when no
 * acknowledgement came in time (the write may be stored), `NoRespondersError` when no stream listens on the subject,
 * `ClosedConnectionError` once the connection is closed.
 */
export class JsPublisher {
  private readonly inbox = `${createInbox()}.`
  private readonly pending = new Map<string, Pending>()
  private readonly sub: Subscription
  private readonly sweep: NodeJS.Timeout
  private next = 0

  constructor(private readonly nc: NatsConnection) {
    this.sub = nc.subscribe(`${this.inbox}*`, { callback: (_err, m) => this.answer(m) })
    this.sweep = setInterval(() => this.expire(), SWEEP_MS)
    this.sweep.unref()
    void this.sub.closed.finally(() => this.close())
  }

  /** Publishes to the stream that takes `subject`, resolving with its acknowledgement. */
  publish(subject: string, data: Uint8Array, headers: MsgHdrs | undefined, timeoutMs: number): Promise<PubAck> {
    if (this.sub.isClosed()) return Promise.reject(new errors.ClosedConnectionError())
    const token = (this.next++).toString(36)
    return new Promise<PubAck>((resolve, reject) => {
      this.pending.set(token, { resolve, reject, deadline: performance.now() + timeoutMs, subject })
      try {
        this.nc.publish(subject, data, { reply: this.inbox + token, ...(headers ? { headers } : {}) })
      } catch (err) {
        this.pending.delete(token)
        reject(err as Error)
      }
    })
  }

  private answer(m: Msg): void {
    const token = m.subject.slice(this.inbox.length)
    const p = this.pending.get(token)
    if (!p) return
    this.pending.delete(token)
    const ack = parseAck(m, p.subject)
    if (ack instanceof Error) p.reject(ack)
    else p.resolve(ack)
  }

  private expire(): void {
    const now = performance.now()
    for (const [token, p] of this.pending) {
      if (p.deadline > now) continue
      this.pending.delete(token)
      p.reject(new TimeoutError())
    }
  }

  private close(): void {
    clearInterval(this.sweep)
    for (const p of this.pending.values()) p.reject(new errors.ClosedConnectionError())
    this.pending.clear()
  }
}

/** A publish's answer: its acknowledgement, or why it was not stored. */
function parseAck(m: Msg, subject: string): PubAck | Error {
  // A status message with no body: nobody listens on the subject (no stream takes it).
  if (m.data.length === 0 && m.headers?.code === 503) return new NoRespondersError(subject)
  let ack: PubAck & { error?: ConstructorParameters<typeof JetStreamApiError>[0] }
  try {
    ack = JSON.parse(m.string())
  } catch (err) {
    return new Error(`an acknowledgement that is not JSON from ${subject}`, { cause: err })
  }
  if (ack.error) return new JetStreamApiError(ack.error)
  ack.duplicate = ack.duplicate ?? false
  return ack
}

/** One publisher per connection: the actors of a host share it. */
const publishers = new WeakMap<NatsConnection, JsPublisher>()

export function jsPublisher(nc: NatsConnection): JsPublisher {
  let p = publishers.get(nc)
  if (!p) publishers.set(nc, (p = new JsPublisher(nc)))
  return p
}
