import { createHash } from 'node:crypto'
import type { JetStreamClient } from '@nats-io/jetstream'
import { Objm, type ObjectStore } from '@nats-io/obj'
import type { FileBytes } from '../../protocol/files.js'
import { ObjectStores } from '../../protocol/subjects.js'

/** Bytes per stored chunk (one JetStream message each; nats.js clamps it to the server's max_payload). */
export const CHUNK_BYTES = 1024 * 1024
/** Chunks a download asks for at a time: what it holds in memory ahead of a slow client. */
const READ_AHEAD = 4

/**
 * File bytes in the `troupe_files` object store, for the gateway. The store is created by the file kind on the actor
 * host, which starts before the gateway; here it is only opened.
 */
export function fileBytes(js: JetStreamClient): FileBytes {
  let opened: Promise<ObjectStore> | undefined
  const store = () => {
    opened ??= new Objm(js).open(ObjectStores.files).catch((err) => {
      opened = undefined
      throw err
    })
    return opened
  }
  return {
    async put(id, body) {
      // nats.js reads `body` as it publishes each chunk (so the upload is paced by the store), and on a failure
      // purges the chunks it wrote: no meta entry is ever written for an incomplete object.
      const info = await (await store()).put({ name: id, options: { max_chunk_size: CHUNK_BYTES } }, body)
      return { size: info.size }
    },
    async discard(id) {
      await (await store()).delete(id)
    },
    async read(id) {
      const os = await store()
      const info = await os.info(id)
      if (!info || info.deleted) return undefined
      return readChunks(js, `OBJ_${ObjectStores.files}`, `$O.${ObjectStores.files}.C.${info.nuid}`, info.chunks, info.digest)
    },
  }
}

/**
 * The chunks of one object through an ordered pull consumer: it asks for READ_AHEAD chunks at a time, so a reader
 * that stops taking them stops the reading (nats.js's own `get` pushes the whole object into memory as fast as the
 * server sends it). The digest is checked at the end; a mismatch throws, so the response is cut short, never
 * completed with wrong bytes.
 */
async function* readChunks(js: JetStreamClient, stream: string, subject: string, chunks: number, digest: string): AsyncGenerator<Uint8Array> {
  if (chunks === 0) return
  const consumer = await js.consumers.get(stream, { filter_subjects: subject })
  const messages = await consumer.consume({ max_messages: READ_AHEAD })
  const sha = createHash('sha256')
  try {
    let seen = 0
    for await (const m of messages) {
      sha.update(m.data)
      yield m.data
      if (++seen === chunks) break
    }
    if (seen < chunks) throw new Error(`object ${subject}: ${seen} of ${chunks} chunks read`)
    const got = `SHA-256=${sha.digest('base64url')}`
    if (got.replace(/=+$/, '') !== digest.replace(/=+$/, '')) throw new Error(`object ${subject}: digest mismatch`)
  } finally {
    messages.stop()
  }
}
