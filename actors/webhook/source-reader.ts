import { randomUUID } from 'node:crypto'
import { DeliverPolicy, JetStreamApiCodes, JetStreamApiError, type JetStreamClient, type JetStreamManager, type JsMsg } from '@nats-io/jetstream'
import type { KV } from '@nats-io/kv'
import type { Logger } from 'pino'
import { decode, encode } from '../../protocol/codec.js'
import { every, isCasConflict } from '../kit/index.js'

/**
 * Where the fan-out of one source stands, `source.<stream>` in the positions bucket: every message up to `seq` is fanned
 * out, and `holder` reads on from there until `until` (epoch ms) unless it renews.
 */
export interface Position {
  seq: number
  holder: string
  until: number
}

/** Which reading of a source: the fan-out's own (`source.`), or the audit that follows it (`audit.`, fanout.ts). */
export type Reading = 'source' | 'audit'

export const positionKey = (stream: string, reading: Reading = 'source') => `${reading}.${stream}`

/** The last message of `stream` read, with all before it (0 when there is no position yet). */
export async function positionOf(kv: KV, stream: string, reading: Reading = 'source'): Promise<number> {
  const e = await kv.get(positionKey(stream, reading))
  return e?.operation === 'PUT' ? decode<Position>(e.value).seq : 0
}

/** A holder that stops renewing (it died) is replaced after this. */
export const LEASE_MS = 6_000
const RENEW_EVERY_MS = 1_500
/** How often a reader that does not hold the lease looks whether it lapsed. */
const CLAIM_EVERY_MS = 1_000
/** A message whose handling fails is tried again after a pause growing to this. */
const MAX_RETRY_PAUSE_MS = 5_000

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/**
 * Makes the position of `stream` when there is none: at its last message (what came before webhooks were configured is
 * not fanned out), or where an earlier version's durable consumer `legacy` had acknowledged to, which is then deleted.
 */
export async function ensurePosition(jsm: JetStreamManager, kv: KV, stream: string, legacy: string, reading: Reading = 'source'): Promise<void> {
  if ((await kv.get(positionKey(stream, reading)))?.operation === 'PUT') return
  const old = await jsm.consumers.info(stream, legacy).catch(() => undefined)
  // A stream not made yet (a bucket whose kind has not started anywhere): everything it will hold is new.
  const last = await jsm.streams.info(stream).then(
    (i) => i.state.last_seq,
    (err) => {
      if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound) return 0
      throw err
    },
  )
  const seq = old ? old.ack_floor.stream_seq : last
  try {
    await kv.create(positionKey(stream, reading), encode({ seq, holder: '', until: 0 } satisfies Position))
  } catch (err) {
    // Another process made it first: theirs stands.
    if (!isCasConflict(err)) throw err
  }
  if (old && reading === 'source') await jsm.consumers.delete(stream, legacy).catch(() => undefined)
}

export interface SourceReaderOptions {
  js: JetStreamClient
  /** The positions bucket. */
  positions: KV
  stream: string
  /** Default the fan-out's. */
  reading?: Reading
  /** Only the headers of each message are read. Default false. */
  headersOnly?: boolean
  /** Fans one message out; a throw means "not now": it is tried again, and nothing after it is read meanwhile. */
  handle(m: JsMsg): Promise<void>
  log: Logger
}

/**
 * Reads one source stream for the fan-out, in order, at least once. One reader of all the orchestrators' holds the
 * source's lease at a time and reads on from the stored position through an ordered consumer (its place is kept by
 * this client, not by server-side acknowledgements: nats-server 2.9's consumers could lose unacknowledged messages
 * across a leader change, when an acknowledgement of a later message moved the new leader past them). A message is
 * handled before the next is read, retried while it fails, and the position, stored with each renewal, only ever
 * names a message handled with all before it. A holder that dies leaves the lease to lapse; the next reads on from the
 * stored position, repeating at most what came since its last renewal (repeats are the same deliveries, deduplicated).
 */
export class SourceReader {
  private readonly self = randomUUID()
  private stopped = false
  private loop: Promise<void> = Promise.resolve()
  private stopCurrent: (() => void) | undefined
  /** The last message handled (with all before it), while this reader holds the lease. */
  private handled = 0

  constructor(private readonly o: SourceReaderOptions) {}

  start(): void {
    this.loop = (async () => {
      while (!this.stopped) {
        const lease = await this.claim().catch((err) => {
          this.o.log.warn({ err, stream: this.o.stream }, 'webhook fan-out position unreadable for a moment')
          return undefined
        })
        if (lease && !this.stopped) await this.lead(lease).catch((err) => this.o.log.warn({ err, stream: this.o.stream }, 'webhook fan-out reading stopped'))
        else await sleep(CLAIM_EVERY_MS)
      }
    })()
  }

  async stop(): Promise<void> {
    this.stopped = true
    this.stopCurrent?.()
    await this.loop
  }

  /** The lease, when it is free, lapsed or this reader's own: the revision written and the position to read from. */
  private async claim(): Promise<{ revision: number; seq: number } | undefined> {
    const key = positionKey(this.o.stream, this.o.reading)
    const e = await this.o.positions.get(key)
    if (e?.operation !== 'PUT') throw new Error(`no webhook fan-out position for ${this.o.stream}`)
    const p = decode<Position>(e.value)
    if (p.holder !== this.self && p.holder !== '' && p.until > Date.now()) return undefined
    try {
      const revision = await this.o.positions.update(
        key,
        encode({ seq: p.seq, holder: this.self, until: Date.now() + LEASE_MS } satisfies Position),
        e.revision,
      )
      if (p.holder !== this.self) this.o.log.info({ stream: this.o.stream, seq: p.seq }, 'webhook fan-out reading on')
      return { revision, seq: p.seq }
    } catch (err) {
      if (isCasConflict(err)) return undefined
      throw err
    }
  }

  /** Reads on from `seq` while the lease is this reader's. */
  private async lead(lease: { revision: number; seq: number }): Promise<void> {
    const key = positionKey(this.o.stream, this.o.reading)
    let revision = lease.revision
    let until = Date.now() + LEASE_MS
    this.handled = lease.seq
    let lost = false
    const consumer = await this.o.js.consumers.get(this.o.stream, {
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: lease.seq + 1,
      ...(this.o.headersOnly ? { headers_only: true } : {}),
    })
    const iter = await consumer.consume({ max_messages: 256 })
    const end = () => {
      lost = true
      iter.stop()
    }
    this.stopCurrent = end
    const write = async (holding: boolean) => {
      const value = { seq: this.handled, holder: holding ? this.self : '', until: holding ? Date.now() + LEASE_MS : 0 }
      revision = await this.o.positions.update(key, encode(value satisfies Position), revision)
      until = value.until
    }
    const renewal = every(
      RENEW_EVERY_MS,
      async () => {
        try {
          await write(true)
        } catch (err) {
          // Taken over (its holder thought this one dead): the other reads on.
          if (isCasConflict(err)) return end()
          // Not renewed in time: another may have taken over by now, so this one yields.
          if (Date.now() > until) end()
          throw err
        }
      },
      (err) => this.o.log.warn({ err, stream: this.o.stream }, 'webhook fan-out lease not renewed for a moment'),
      { firstAfter: true },
    )
    try {
      for await (const m of iter) {
        if (m.seq <= this.handled) continue
        if (!(await this.handleInOrder(m, () => lost))) break
        this.handled = m.seq
      }
    } finally {
      await renewal.stop()
      iter.stop()
      this.stopCurrent = undefined
      // Handed back at once when stopping (the next holder need not wait for the lease to lapse).
      if (!lost || this.stopped) await write(false).catch(() => undefined)
    }
  }

  /** Handles `m`, retrying while it fails; false if reading ended first (it was not handled). */
  private async handleInOrder(m: JsMsg, ended: () => boolean): Promise<boolean> {
    for (let failures = 0; ; failures++) {
      try {
        await this.o.handle(m)
        return true
      } catch (err) {
        if (failures === 0) this.o.log.warn({ err, stream: this.o.stream, seq: m.seq }, 'webhook fan-out failed for a moment; tried again')
        if (ended() || this.stopped) return false
        await sleep(Math.min(250 * 2 ** failures, MAX_RETRY_PAUSE_MS))
      }
    }
  }
}
