import { createHash } from 'node:crypto'
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream'
import { Objm, type ObjectStore } from '@nats-io/obj'
import type { FileBytes } from '../../protocol/files.js'
import { ObjectStores, objectChunkPrefix, objectStream } from '../../protocol/subjects.js'

/** Bytes per stored chunk (one JetStream message each; nats.js clamps it to the server's max_payload). */
export const CHUNK_BYTES = 1024 * 1024

/** File bytes, and what the file kind also asks of the store: the digest of an object stored before records kept it. */
export interface FileObjects extends FileBytes {
  /** The SHA-256 the store computed for `object` (`SHA-256=<base64url>`); undefined when there is no such object. */
  digest(object: string): Promise<string | undefined>
}

/**
 * File bytes in the `troupe_files` object store, for the gateway and the file and session kinds. The store is created
 * by the file kind on the actor host, which starts before the gateway; here it is only opened.
 */
export function fileBytes(js: JetStreamClient): FileObjects {
  let opened: Promise<ObjectStore> | undefined
  let jsm: Promise<JetStreamManager> | undefined
  const store = () => {
    opened ??= new Objm(js).open(ObjectStores.files).catch((err) => {
      opened = undefined
      throw err
    })
    return opened
  }
  return {
    async put(object, body) {
      // nats.js reads `body` as it publishes each chunk (so the upload is paced by the store), and on a failure
      // purges the chunks it wrote: no meta entry is ever written for an incomplete object.
      const info = await (await store()).put({ name: object, options: { max_chunk_size: CHUNK_BYTES } }, body)
      return { size: info.size, digest: info.digest }
    },
    async discard(object) {
      await (await store()).delete(object)
    },
    async digest(object) {
      const info = await (await store()).info(object)
      return info && !info.deleted ? info.digest : undefined
    },
    async read(object) {
      const os = await store()
      const info = await os.info(object)
      if (!info || info.deleted) return undefined
      jsm ??= js.jetstreamManager()
      return readChunks(await jsm, objectStream(ObjectStores.files), objectChunkPrefix(ObjectStores.files) + info.nuid, info.chunks, info.digest)
    },
  }
}

/** Whether two `SHA-256=<base64url>` digests are the same, padded or not. */
export const sameDigest = (a: string, b: string): boolean => a.replace(/=+$/, '') === b.replace(/=+$/, '')

/** `chunks` as a stream that asks for the next one only when its reader wants it (no read-ahead of its own). */
export function pulled(chunks: AsyncIterable<Uint8Array>): ReadableStream<Uint8Array> {
  const it = chunks[Symbol.asyncIterator]()
  return new ReadableStream<Uint8Array>(
    {
      async pull(c) {
        const r = await it.next()
        if (r.done) c.close()
        else c.enqueue(r.value)
      },
      async cancel() {
        await it.return?.()
      },
    },
    { highWaterMark: 0 },
  )
}

/**
 * The chunks of one object, each fetched by direct get (the next message on the object's chunk subject), one ahead of
 * the reader: a reader that stops taking them stops the reading (nats.js's own `get` pushes the whole object into
 * memory as fast as the server sends it), and an object deleted midway ends the read at once rather than leaving a
 * consumer waiting for chunks that will never come. The digest is checked at the end; a mismatch or a missing chunk
 * throws, so the response is cut short, never completed with wrong bytes.
 */
async function* readChunks(jsm: JetStreamManager, stream: string, subject: string, chunks: number, digest: string): AsyncGenerator<Uint8Array> {
  const fetchFrom = (seq: number) => jsm.direct.getMessage(stream, { seq, next_by_subj: subject }).catch(() => null)
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
  if (chunks > 0 && !sameDigest(got, digest)) throw new Error(`object ${subject}: digest mismatch`)
}
