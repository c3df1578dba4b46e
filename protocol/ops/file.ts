import type { Page } from '../page.js'
import { type FileContent, type FileMetadata, FileCopyInput, FileListQuery, FileRecordInput } from '../schemas/file.js'
import { defineKind, returns } from './define.js'

/**
 * Files: any host serves any file. The bytes never travel over the actor wire: the gateway streams an upload into
 * the object store and then asks `create` to record it, and streams a download out of the store once `content` said
 * which object holds it (protocol/files.ts).
 */
export const FileKind = defineKind(
  'file',
  { param: 'file_id', prefix: 'file', noun: 'File' },
  {
    /**
     * Records a file whose bytes are stored whole in the object `object` (else the one named like its id): the
     * gateway's, after an upload. A record of the id there already answers a retry (the same upload again: the
     * attempt's object is discarded) or refuses a reused Idempotency-Key (422, the attempt's object discarded too).
     */
    create: { placement: 'any', body: FileRecordInput, reply: returns<FileMetadata>() },
    /**
     * Internal (the session kind; no route): copies a file's bytes, object store to object store as they are read,
     * under a new id scoped to a session. Idempotent by the new id.
     */
    copy: { placement: 'any', body: FileCopyInput, reply: returns<FileMetadata>() },
    list: { placement: 'any', query: FileListQuery, reply: returns<Page<FileMetadata>>() },
    get: { placement: 'any', reply: returns<FileMetadata>() },
    /** The file and the object its bytes are in: the download route's, and whatever else reads a file's bytes. */
    content: { placement: 'any', reply: returns<FileContent>() },
    delete: { placement: 'any', reply: returns<{ id: string; type: 'file_deleted' }>() },
  },
)
