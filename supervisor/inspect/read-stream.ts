import { DeliverPolicy, JetStreamApiCodes, JetStreamApiError, type Consumer, type JetStreamClient, type JsMsg } from '@nats-io/jetstream'

export interface StreamRead {
  stream: string
  filter: string
  /** Every stored message, the last one of each subject (a KV bucket's current values), or those from a sequence on. */
  deliver: 'all' | 'last_per_subject' | { from: number }
  /** Keep delivering messages stored later, until the signal aborts. Default false: end at what was stored. */
  follow?: boolean
  /** Called once, when everything stored at the start has been delivered. */
  caughtUp?: () => void
  signal?: AbortSignal
}

/** A read that says messages are pending but delivers none for this long (purged under it) ends. */
const STALL_MS = 2000

/** The messages read, and how many were stored for this read when it began. */
export type StreamReading = AsyncGenerator<JsMsg> & { stored: number }

/**
 * Reads a stream through an ordered consumer (ephemeral, unacknowledged, removed by the server once idle).
 * Null when the stream does not exist.
 */
export async function readStream(js: JetStreamClient, o: StreamRead): Promise<StreamReading | null> {
  let consumer: Consumer
  try {
    consumer = await js.consumers.get(o.stream, {
      filter_subjects: o.filter,
      ...(o.deliver === 'all'
        ? { deliver_policy: DeliverPolicy.All }
        : o.deliver === 'last_per_subject'
          ? { deliver_policy: DeliverPolicy.LastPerSubject }
          : { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: o.deliver.from }),
      inactive_threshold: 30_000,
    })
  } catch (err) {
    if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound) return null
    throw err
  }
  const stored = (await consumer.info(true)).num_pending
  const messages = (async function* () {
    let behind = stored > 0
    if (!behind) o.caughtUp?.()
    if (!o.follow && !behind) return
    for (;;) {
      if (o.signal?.aborted) return
      const batch = o.follow ? await consumer.consume({ max_messages: 256 }) : await consumer.fetch({ max_messages: 256, expires: STALL_MS })
      const stop = () => batch.stop()
      o.signal?.addEventListener('abort', stop, { once: true })
      let got = 0
      try {
        for await (const m of batch) {
          got++
          yield m
          if (behind && m.info.pending === 0) {
            behind = false
            o.caughtUp?.()
            if (!o.follow) return
          }
        }
      } finally {
        o.signal?.removeEventListener('abort', stop)
        batch.stop()
      }
      if (o.follow || !got || o.signal?.aborted) return
    }
  })()
  return Object.assign(messages, { stored })
}
