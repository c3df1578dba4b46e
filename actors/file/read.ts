import { isApiError } from '../../protocol/errors/api-error.js'
import type { FileBytes } from '../../protocol/files.js'
import { FileKind } from '../../protocol/ops/file.js'
import type { ActorClient } from '../kit/index.js'

/** Reads a file's bytes by its id: those of the object its record names. */
export interface FileReader {
  /** The file's bytes in order, read as the caller takes them; undefined when the file (or its object) is gone. */
  read(fileId: string): Promise<AsyncIterable<Uint8Array> | undefined>
}

/** A `FileReader` that asks the file kind (`content`) which object holds a file, then reads that object. */
export function fileReader(client: ActorClient, bytes: Pick<FileBytes, 'read'>): FileReader {
  return {
    async read(fileId) {
      const found = await client.call(FileKind.ops.content, { id: fileId }).catch((err: unknown) => {
        if (isApiError(err) && err.status === 404) return undefined
        throw err
      })
      return found && bytes.read(found.object)
    },
  }
}
