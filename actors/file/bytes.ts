import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream'
import { Objm, type ObjectStore } from '@nats-io/obj'
import type { FileBytes } from '../../protocol/files.js'
import { ObjectStores, objectChunkPrefix, objectStream } from '../../protocol/subjects.js'
import { ObjectWrites, readChunks } from '../kit/index.js'

/** File bytes, and what the file kind also asks of the store: the digest of an object stored before records kept it. */
export interface FileObjects extends FileBytes {
  /** The SHA-256 the store computed for `object` (`SHA-256=<base64url>`); undefined when there is no such object. */
  digest(object: string): Promise<string | undefined>
}

/**
 * File bytes in the `troupe_files` object store (or `name`: skill bundles), for the gateway and the kinds. The store is
 * created by its kind on the actor host, which starts before the gateway; here it is only opened.
 */
export function fileBytes(js: JetStreamClient, name: string = ObjectStores.files): FileObjects {
  let opened: Promise<ObjectStore> | undefined
  let jsm: Promise<JetStreamManager> | undefined
  // Writes never purge a subject: nats.js's own put over a name and delete would (kit/object-writes.ts).
  const writes = new ObjectWrites(js, name)
  const store = () => {
    opened ??= new Objm(js).open(name).catch((err) => {
      opened = undefined
      throw err
    })
    return opened
  }
  return {
    async put(object, body) {
      // `body` is read as each chunk is published (so the upload is paced by the store), and on a failure the chunks
      // written are deleted: no meta entry is ever written for an incomplete object.
      const info = await writes.put(object, body)
      return { size: info.size, digest: info.digest }
    },
    async discard(object) {
      await writes.delete(object)
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
      // A replica still catching up after its node restarted answers "not found" to direct gets of what it missed:
      // those chunks come from the stream's leader, so a download is not cut short (kit/object-stores.ts).
      const subject = objectChunkPrefix(name) + info.nuid
      return readChunks(await jsm, objectStream(name), subject, info.chunks, info.digest, 'leader if missing')
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
