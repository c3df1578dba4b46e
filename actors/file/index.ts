import { Objm } from '@nats-io/obj'
import { FileKind } from '../../protocol/ops/file.js'
import { Buckets, ObjectStores } from '../../protocol/subjects.js'
import { type ActorKindDef, every, implement, openBucket, openObjectStore, Projection } from '../kit/index.js'
import { fileOps } from './behaviour.js'
import { fileBytes } from './bytes.js'
import { sweepCopies } from './copies.js'
import { FILE_PREFIX, type StoredFile } from './state.js'
import { fileNames, namedAtSource, ORPHAN_AGE_MS, sweepOrphans } from './sweep.js'

export { copyIdOf } from './copies.js'

/**
 * Files: any host serves any file's metadata (KV records, written only once the bytes are whole); the bytes live in
 * the `troupe_files` object store, which the gateway streams in and out (actors/file/bytes.ts), and which `copy`
 * streams from one object to another for session resources.
 */
export const fileKind: ActorKindDef = {
  contract: FileKind,
  async start(ctx) {
    const kv = await openBucket(ctx.kvm, ctx.storage, Buckets.files)
    const objects = await openObjectStore(new Objm(ctx.js), ctx.storage, ObjectStores.files)
    const projection = new Projection<StoredFile>(kv, FILE_PREFIX)
    await projection.start(ctx.log)
    const age = ctx.settings.sweepAgeMs ?? ORPHAN_AGE_MS
    const sweeper = every(
      age,
      async () => {
        await projection.fresh()
        const named = namedAtSource(projection, fileNames)
        const gone: string[] = []
        const swept = await sweepOrphans(objects, ctx.jsm, named, age, undefined, gone)
        if (swept) ctx.log.info({ swept, objects: gone.slice(0, 20) }, 'swept file bytes no record names')
        const copies = await sweepCopies(projection.list(), ctx.client)
        if (copies) ctx.log.info({ copies }, 'swept copies made for session resources that never came to be or are gone')
      },
      (err) => ctx.log.warn({ err }, 'sweeping orphaned file bytes failed'),
    )
    return {
      ops: implement(FileKind, fileOps(kv, fileBytes(ctx.js), projection)),
      close: async () => {
        await sweeper.stop()
        projection.stop()
      },
    }
  },
}

// The file objects, reads and orphan sweep that sessions, skills and the gateway's downloads (through the supervisor) share.
export { type FileObjects, fileBytes } from './bytes.js'
export { type FileReader, fileReader } from './read.js'
export { namedAtSource, ORPHAN_AGE_MS, sweepOrphans } from './sweep.js'
