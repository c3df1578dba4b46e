import { createHash } from 'node:crypto'
import { JetStreamApiError, type JetStreamManager } from '@nats-io/jetstream'
import { type ObjectStore, type ObjectStoreOptions, type Objm, setSha256Backend } from '@nats-io/obj'
import { ensureReplicas, replicasRefused, type Storage, untilLed } from './replicas.js'
import { retryWhileStarting } from './retry.js'
import { isTransientNatsError } from './nats-errors.js'
import { retry, retryPolicy } from './retry-policy.js'

// nats.js hashes every object it puts, on the event loop, in pure JS by default (js-sha256, ~65 MB/s here): a 25 MB
// skill bundle held the loop in stretches of 60–130 ms, ~400 ms per upload, and GETs meanwhile waited behind it
// (test/bench/skill-server.ts). node:crypto's hash is the same digest at OpenSSL speed. Process-wide: every put of
// ours goes through a module that imports this one.
setSha256Backend('native')

/** Bytes per stored chunk (one JetStream message each; nats.js clamps it to the server's max_payload). */
export const CHUNK_BYTES = 1024 * 1024

/**
 * Opens one of the project's object stores, creating it when missing with the configured replicas (an existing one
 * is brought to them), retrying while JetStream elects its leader: kit/buckets.ts for bytes.
 */
export async function openObjectStore(objm: Objm, storage: Storage, name: string, opts: Partial<ObjectStoreOptions> = {}): Promise<ObjectStore> {
  const os = await retryWhileStarting(`${name} object store`, () => objm.create(name, { ...opts, replicas: storage.replicas }), { log: storage.log }).catch(
    (err) => {
      if (err.cause instanceof JetStreamApiError && storage.replicas > 1) throw replicasRefused(`${name} object store`, storage.replicas, err.cause)
      throw err
    },
  )
  const info = await untilLed(storage, `${name} object store`, `OBJ_${name}`)
  await ensureReplicas(storage, info.config.name, info.config)
  return os
}

/**
 * A chunk the leader did not answer for (a server too loaded to answer within the request timeout, an election):
 * 3 attempts, 200 ms then 400 ms apart, each a direct get and then the leader, before the read fails and a download
 * is cut short.
 */
const chunkRetry = retryPolicy({ initialIntervalMs: 200, maximumAttempts: 3 })

/**
 * The chunks of one object, each fetched by direct get (the next message on the object's chunk subject), one ahead of
 * the reader: a reader that stops taking them stops the reading (nats.js's own `get` pushes the whole object into
 * memory as fast as the server sends it), and an object deleted midway ends the read at once rather than leaving a
 * consumer waiting for chunks that will never come. The digest is checked at the end; a mismatch or a missing chunk
 * throws, so the response is cut short, never completed with wrong bytes.
 *
 * `from: 'leader if missing'` asks the stream's leader for a chunk a direct get did not find, its failures thrown as
 * they are: a direct get is answered by any replica, and NATS hands it to the one on the server the client is connected
 * to, so a replica still catching up (a node just restarted, nats-server 2.9) answered "not found" for every chunk
 * written while it was down, to every read of that client, for over a minute in a chaos run. What must be whole (a
 * restore) reads so. (Every chunk from the leader: 100 MB restored in 1.4 s instead of 0.5–0.9 s, its answers being
 * JSON with the bytes in base64.)
 */
export async function* readChunks(
  jsm: JetStreamManager,
  stream: string,
  subject: string,
  chunks: number,
  digest: string,
  from: 'any replica' | 'leader if missing' = 'any replica',
): AsyncGenerator<Uint8Array> {
  const fetchOnce = async (seq: number) => {
    const direct = await jsm.direct.getMessage(stream, { seq, next_by_subj: subject }).catch(() => null)
    if (direct || from === 'any replica') return direct
    // nats-server answers next_by_subj on the leader's message get too (2.9 and later); nats.js types only the direct one.
    return jsm.streams.getMessage(stream, { seq, next_by_subj: subject } as unknown as { seq: number })
  }
  const fetchFrom = (seq: number) => retry(chunkRetry, () => fetchOnce(seq), { retryable: isTransientNatsError })
  const sha = createHash('sha256')
  let next = chunks > 0 ? fetchFrom(1) : undefined
  for (let i = 0; i < chunks; i++) {
    const m = await next!
    if (!m) throw new Error(`object ${subject}: chunk ${i + 1} of ${chunks} is gone`)
    if (i + 1 < chunks) next = fetchFrom(m.seq + 1)
    sha.update(m.data)
    yield m.data
  }
  const got = `SHA-256=${sha.digest('base64url')}`
  if (chunks > 0 && got.replace(/=+$/, '') !== digest.replace(/=+$/, '')) throw new Error(`object ${subject}: digest mismatch`)
}
