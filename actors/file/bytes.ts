import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream'
import { Objm, type ObjectStore } from '@nats-io/obj'
import type { FileBytes } from '../../protocol/files.js'
import { ObjectStores, objectChunkPrefix, objectStream } from '../../protocol/subjects.js'
import { CHUNK_BYTES, readChunks } from '../kit/object-stores.js'

/**
 * File bytes in the `troupe_files` object store, for the gateway. The store is created by the file kind on the actor
 * host, which starts before the gateway; here it is only opened.
 */
export function fileBytes(js: JetStreamClient): FileBytes {
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
      jsm ??= js.jetstreamManager()
      return readChunks(await jsm, objectStream(ObjectStores.files), objectChunkPrefix(ObjectStores.files) + info.nuid, info.chunks, info.digest)
    },
  }
}
